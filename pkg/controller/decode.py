"""Turning list and watch responses into cached objects, once, straight from the raw JSON.

KubeVirt kinds become kubevirt_api models; a whole list response is validated by pydantic's JSON parser
in one call (no intermediate dicts). Kubernetes kinds stay plain dicts from ``json.loads``. An object that
does not decode is logged with its field path and left out, never cached half-read.

Cached objects carry no ``metadata.managedFields``: no controller reads them, they take about a third of
a cached VMI's memory, and an update that leaves them out keeps the server's copy unchanged.
"""

from __future__ import annotations

import gc
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Generic, TypeVar, cast

from pydantic import ValidationError, create_model

from kubevirt.client.resources import Resource
from kubevirt.log import get_logger
from kubevirt_api.base import ApiModel, ApiParseError
from kubevirt_api.k8s.meta_v1 import ListMeta
from kubevirt_api.view import JSON

__all__ = ["Decoder", "decoder_for"]

T = TypeVar("T")
_log = get_logger()


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Pauses the cyclic garbage collector while thousands of objects are built.

    Each young-generation collection walks every container object still alive, so building a large
    list with the collector on costs several times the decoding itself; nothing built here is cyclic.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


class Decoder(Generic[T]):
    """Decodes one object (a watch event's) or a whole list response of one resource."""

    def __init__(self, resource: Resource, one: Callable[[JSON], T]) -> None:
        self.resource = resource
        self._one = one

    def one(self, data: JSON) -> T | None:
        """The object, or None (logged) if it does not decode."""
        self._fill_type(data)
        meta = data.get("metadata")
        if isinstance(meta, dict):
            meta.pop("managedFields", None)
        try:
            return self._one(data)
        except (ApiParseError, ValueError, TypeError) as err:
            meta = data.get("metadata") or {}
            _log.error(
                "object does not decode, left out of the cache",
                kind=self.resource.kind,
                namespace=meta.get("namespace"),
                name=meta.get("name"),
                reason=str(err),
            )
            return None

    def list(self, raw: bytes) -> tuple[list[T], str]:
        """The list's objects and its resourceVersion."""
        with _collector_paused():
            body = json.loads(raw)
            items = body.get("items") or []
            decoded = [obj for obj in (self.one(item) for item in items) if obj is not None]
        return decoded, str((body.get("metadata") or {}).get("resourceVersion") or "")

    def _fill_type(self, data: JSON) -> None:
        # List items of built-in kinds come without their type.
        data.setdefault("apiVersion", self.resource.api_version)
        data.setdefault("kind", self.resource.kind)


class ModelDecoder(Decoder[T]):
    """For kubevirt_api models: the list response is parsed and validated in one pass."""

    def __init__(self, resource: Resource, model: type[ApiModel]) -> None:
        super().__init__(resource, cast(Callable[[JSON], T], model.from_dict))
        self._list_model = create_model(
            f"{model.__name__}ListResponse",
            __base__=ApiModel,
            metadata=(ListMeta | None, None),
            items=(list[model] | None, None),  # type: ignore[valid-type,arg-type]
        )

    def list(self, raw: bytes) -> tuple[list[T], str]:
        try:
            with _collector_paused():
                parsed: Any = self._list_model.model_validate_json(raw)
        except ValidationError:
            return super().list(raw)  # find, log and leave out the objects at fault
        items = cast(list[T], parsed.items or [])
        for item in items:
            meta = getattr(item, "metadata", None)
            if meta is not None:
                meta.managed_fields = None
        version = parsed.metadata.resource_version if parsed.metadata is not None else None
        return items, version or ""


def _identity(data: JSON) -> JSON:
    return data


def decoder_for(resource: Resource, decode: Any) -> Decoder[Any]:
    """``decode`` is a kubevirt_api model class (or its ``from_dict``), another callable taking the
    object's dict, or None (or ``dict``) to keep plain dicts."""
    if decode is None or decode is dict:
        return Decoder(resource, _identity)
    if isinstance(decode, type) and issubclass(decode, ApiModel):
        return ModelDecoder(resource, decode)
    owner = getattr(decode, "__self__", None)
    is_from_dict = getattr(decode, "__name__", None) == "from_dict"
    if is_from_dict and isinstance(owner, type) and issubclass(owner, ApiModel):
        return ModelDecoder(resource, owner)
    if callable(decode):
        return Decoder(resource, decode)
    raise TypeError(f"decode: expected a model class or a callable, got {decode!r}")
