"""The walk's only way to the API: gets and lists, nothing that writes, each answer read once.

A read the user may not make (403) or that fails for another reason becomes :class:`UnseenError`, which a
link turns into "could not see X: forbidden" before the walk goes on with what it has.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

from kubevirt.client import (
    JSON,
    ApiError,
    ConnectionFailedError,
    ForbiddenError,
    KubeReader,
    NotFoundError,
    Resource,
)
from kubevirt.log import get_logger

__all__ = ["ApiReader", "RawReader", "Reader", "UnseenError"]

_log = get_logger()


# The read half of the client is all a diagnosis needs.
ApiReader = KubeReader


@runtime_checkable
class RawReader(Protocol):
    """A client that can also GET a path of its own (a virt-api subresource, say)."""

    def request(self, method: str, path: str) -> bytes: ...


class UnseenError(Exception):
    """A read that was refused or failed; ``str()`` is the sentence the user reads."""

    def __init__(self, what: str, reason: str) -> None:
        self.what = what
        self.reason = reason
        super().__init__(f"could not see {what}: {reason}")


def _reason(error: ApiError) -> str:
    if isinstance(error, ForbiddenError):
        return "forbidden"
    return str(error)


class Reader:
    """Caches every answer for the length of one walk, so links that share an object read it once.

    Once the API server could not be reached at all, later reads fail at once with the same reason
    instead of each retrying the connection again.
    """

    def __init__(self, api: ApiReader) -> None:
        self._api = api
        self._answers: dict[tuple[str, ...], Any] = {}
        self._unreachable: str | None = None

    def get(self, resource: Resource, namespace: str | None, name: str) -> JSON | None:
        """The object, or None when it does not exist; raises :class:`UnseenError`."""
        what = f"{resource.kind} {namespace}/{name}" if namespace else f"{resource.kind} {name}"
        answer: JSON | None = self._read(
            ("get", resource.plural, namespace or "", name),
            what,
            lambda: self._get(resource, namespace, name),
        )
        return answer

    def list(
        self, resource: Resource, namespace: str | None = None, *, label_selector: str | None = None
    ) -> list[JSON]:
        """The objects (all namespaces when ``namespace`` is None); raises :class:`UnseenError`."""
        where = f" in namespace {namespace}" if namespace else ""
        what = f"{resource.plural}{where}" + (f" ({label_selector})" if label_selector else "")
        items: list[JSON] = self._read(
            ("list", resource.plural, namespace or "", label_selector or ""),
            what,
            lambda: self._api.list(resource, namespace, label_selector=label_selector)[0],
        )
        return items

    def subresource(self, path: str, what: str) -> JSON:
        """GETs ``path`` (read-only: the walk never sends anything else); raises :class:`UnseenError`."""
        api = self._api
        if not isinstance(api, RawReader):
            raise UnseenError(what, "this client cannot call subresources")

        def read() -> JSON:
            try:
                decoded = json.loads(api.request("GET", path))
            except ValueError:
                raise ApiError(500, "InternalError", "the answer is not JSON") from None
            if not isinstance(decoded, dict):
                raise ApiError(500, "InternalError", "the answer is not a JSON object")
            return decoded

        answer: JSON = self._read(("raw", path), what, read)
        return answer

    def _get(self, resource: Resource, namespace: str | None, name: str) -> JSON | None:
        try:
            return self._api.get(resource, namespace, name)
        except NotFoundError:
            return None

    def _read(self, key: tuple[str, ...], what: str, read: Callable[[], Any]) -> Any:
        if key not in self._answers:
            if self._unreachable is not None:
                self._answers[key] = UnseenError(what, self._unreachable)
            else:
                try:
                    self._answers[key] = read()
                except ApiError as err:
                    _log.debug("diagnose read refused", what=what, reason=str(err))
                    self._answers[key] = UnseenError(what, _reason(err))
                    if isinstance(err, ConnectionFailedError):
                        self._unreachable = _reason(err)
        answer = self._answers[key]
        if isinstance(answer, UnseenError):
            raise UnseenError(answer.what, answer.reason)
        return answer
