"""What reconcilers need from the API, as Protocols, so unit tests hand them in-memory fakes.

:class:`kubevirt.client.KubeClient` satisfies :class:`KubeApi`; :class:`kubevirt.client.EventRecorder`
satisfies :class:`EventSink`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from kubevirt.client.resources import Resource
from kubevirt_api.view import JSON

__all__ = ["JSON", "EventSink", "KubeApi", "KubeReader"]

# Spelled before the classes: inside them `list` is the method.
_Items = list[JSON]
_Patch = list[Any] | dict[str, Any]


class KubeReader(Protocol):
    """The reads of :class:`KubeApi`, for code that must never write (``virtctl diagnose``)."""

    def get(self, resource: Resource, namespace: str | None, name: str) -> JSON: ...

    def list(
        self,
        resource: Resource,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> tuple[_Items, str]: ...


class KubeApi(KubeReader, Protocol):
    """Plain-JSON reads and writes of API objects; ``namespace`` is None for cluster-scoped kinds."""

    def create(self, resource: Resource, namespace: str | None, body: Mapping[str, Any]) -> JSON: ...

    def update(self, resource: Resource, namespace: str | None, body: Mapping[str, Any]) -> JSON: ...

    def update_status(self, resource: Resource, namespace: str | None, body: Mapping[str, Any]) -> JSON: ...

    def patch(
        self,
        resource: Resource,
        namespace: str | None,
        name: str,
        patch: _Patch,
        *,
        patch_type: str = "json",
        subresource: str | None = None,
    ) -> JSON: ...

    def delete(
        self,
        resource: Resource,
        namespace: str | None,
        name: str,
        *,
        uid: str | None = None,
        grace_period_seconds: int | None = None,
        propagation_policy: str | None = None,
    ) -> None: ...


class EventSink(Protocol):
    """Records a Kubernetes Event about an object ("Normal" or "Warning")."""

    def event(self, obj: Any, event_type: str, reason: str, message: str) -> None: ...
