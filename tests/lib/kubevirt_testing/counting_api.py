"""The real API client with every write it makes counted, to check a component's write budget."""

from __future__ import annotations

import threading
from typing import Any

from kubevirt.client import KubeClient, Resource


class CountingApi:
    """The real client, with every write it makes counted by (verb, plural)."""

    def __init__(self, client: KubeClient) -> None:
        self._client = client
        self.writes: list[tuple[str, str]] = []
        self._lock = threading.Lock()

    def _count(self, verb: str, resource: Resource) -> None:
        with self._lock:
            self.writes.append((verb, resource.plural))

    def get(self, resource: Resource, namespace: str | None, name: str) -> dict[str, Any]:
        return self._client.get(resource, namespace, name)

    def list(self, resource: Resource, namespace: str | None = None, **kwargs: Any) -> tuple[list[Any], str]:
        return self._client.list(resource, namespace, **kwargs)

    def create(self, resource: Resource, namespace: str | None, body: Any) -> dict[str, Any]:
        self._count("create", resource)
        return self._client.create(resource, namespace, body)

    def update(self, resource: Resource, namespace: str | None, body: Any) -> dict[str, Any]:
        self._count("update", resource)
        return self._client.update(resource, namespace, body)

    def update_status(self, resource: Resource, namespace: str | None, body: Any) -> dict[str, Any]:
        self._count("update_status", resource)
        return self._client.update_status(resource, namespace, body)

    def patch(
        self, resource: Resource, namespace: str | None, name: str, patch: Any, **kwargs: Any
    ) -> dict[str, Any]:
        self._count("patch", resource)
        return self._client.patch(resource, namespace, name, patch, **kwargs)

    def delete(self, resource: Resource, namespace: str | None, name: str, **kwargs: Any) -> None:
        self._count("delete", resource)
        self._client.delete(resource, namespace, name, **kwargs)

    def of(self, plural: str) -> list[str]:
        """The verbs of the writes made to ``plural``, in order."""
        with self._lock:
            return [verb for verb, written in self.writes if written == plural]
