"""Informers for kinds other projects define (CSI snapshots, CDI), started once their CRDs are served.

A cluster may lack such a kind, or get it later: virt-controller watches the CRDs and starts each
informer when its CRD serves the version it reads, instead of failing to list a kind the API server
does not know. Until then the kind's store is None, which callers read as "none exist".
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import Any

from kubevirt.client.resources import Resource
from kubevirt.controller import Informer, SharedInformerFactory, Store
from kubevirt.log import get_logger
from kubevirt_api.view import JSON

Connect = Callable[[Informer[JSON]], None]


def crd_name(resource: Resource) -> str:
    return f"{resource.plural}.{resource.group}"


class CrdGatedInformers:
    """Starts the informers of ``resources`` once their CRDs are served; its ``on_crd_*`` methods are
    the CRD informer's handlers."""

    def __init__(self, factory: SharedInformerFactory, resources: Iterable[Resource]) -> None:
        self._factory = factory
        self._lock = threading.Lock()
        self._informers: dict[str, Informer[JSON]] = {}
        self._resources = {crd_name(resource): resource for resource in resources}
        self._connect: dict[str, list[Connect]] = {name: [] for name in self._resources}

    def on_started(self, resource: Resource, connect: Connect) -> None:
        """``connect`` is called with the kind's informer when it starts (handlers go there)."""
        self._connect[crd_name(resource)].append(connect)

    def store(self, resource: Resource) -> Store[JSON] | None:
        """The kind's cache once its informer started; None while its CRD is not served."""
        with self._lock:
            informer = self._informers.get(crd_name(resource))
        return informer.store if informer is not None else None

    def synced_store(self, resource: Resource) -> Store[JSON] | None:
        """The kind's cache once its informer has listed: before that, an empty cache would say that
        nothing exists."""
        with self._lock:
            informer = self._informers.get(crd_name(resource))
        return informer.store if informer is not None and informer.has_synced() else None

    def on_crd_add(self, crd: JSON) -> None:
        self._maybe_start(crd)

    def on_crd_update(self, old: JSON, new: JSON) -> None:
        self._maybe_start(new)

    def on_crd_delete(self, crd: Any) -> None:
        pass  # an informer of a kind that went away just stops seeing objects

    def _maybe_start(self, crd: JSON) -> None:
        name = (crd.get("metadata") or {}).get("name") or ""
        resource = self._resources.get(name)
        if resource is None or not _serves(crd, resource.version):
            return
        with self._lock:
            if name in self._informers:
                return
            informer = self._factory.informer(resource)
            self._informers[name] = informer
        get_logger().info("a kind served by a CRD appeared: watching it", crd=name)
        for connect in self._connect[name]:
            connect(informer)


def _serves(crd: JSON, version: str) -> bool:
    versions = (crd.get("spec") or {}).get("versions") or ()
    return any(entry.get("name") == version and entry.get("served") for entry in versions)
