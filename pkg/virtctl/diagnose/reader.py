"""The walk's only way to the API: gets and lists, nothing that writes, each answer read once.

A read the user may not make (403) or that fails for another reason becomes :class:`UnseenError`, which a
link turns into "could not see X: forbidden" before the walk goes on with what it has.
"""

from __future__ import annotations

from typing import Protocol

from kubevirt.client import JSON, ApiError, ForbiddenError, NotFoundError, Resource
from kubevirt.log import get_logger

__all__ = ["ApiReader", "Reader", "UnseenError"]

_log = get_logger()


class ApiReader(Protocol):
    """The read half of :class:`kubevirt.client.KubeApi`: a diagnosis needs nothing else."""

    def get(self, resource: Resource, namespace: str | None, name: str) -> JSON: ...

    def list(
        self,
        resource: Resource,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> tuple[list[JSON], str]: ...


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
    """Caches every answer for the length of one walk, so links that share an object read it once."""

    def __init__(self, api: ApiReader) -> None:
        self._api = api
        self._gets: dict[tuple[str, str | None, str], JSON | UnseenError | None] = {}
        self._lists: dict[tuple[str, str | None, str | None], list[JSON] | UnseenError] = {}

    def get(self, resource: Resource, namespace: str | None, name: str) -> JSON | None:
        """The object, or None when it does not exist; raises :class:`UnseenError`."""
        key = (resource.plural, namespace, name)
        if key not in self._gets:
            what = f"{resource.kind} {namespace}/{name}" if namespace else f"{resource.kind} {name}"
            try:
                self._gets[key] = self._api.get(resource, namespace, name)
            except NotFoundError:
                self._gets[key] = None
            except ApiError as err:
                _log.debug("diagnose read refused", what=what, reason=str(err))
                self._gets[key] = UnseenError(what, _reason(err))
        return self._answer(self._gets[key])

    def list(
        self, resource: Resource, namespace: str | None = None, *, label_selector: str | None = None
    ) -> list[JSON]:
        """The objects (all namespaces when ``namespace`` is None); raises :class:`UnseenError`."""
        key = (resource.plural, namespace, label_selector)
        if key not in self._lists:
            where = f" in namespace {namespace}" if namespace else ""
            what = f"{resource.plural}{where}" + (f" ({label_selector})" if label_selector else "")
            try:
                self._lists[key] = self._api.list(resource, namespace, label_selector=label_selector)[0]
            except ApiError as err:
                _log.debug("diagnose read refused", what=what, reason=str(err))
                self._lists[key] = UnseenError(what, _reason(err))
        answer = self._lists[key]
        if isinstance(answer, UnseenError):
            raise UnseenError(answer.what, answer.reason)
        return answer

    @staticmethod
    def _answer(answer: JSON | UnseenError | None) -> JSON | None:
        if isinstance(answer, UnseenError):
            raise UnseenError(answer.what, answer.reason)
        return answer
