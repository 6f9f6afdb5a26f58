"""Shared informers: asking twice for the same resource and selectors gives the same informer (one watch)."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, TypeVar, overload

from kubevirt.client.resources import Resource
from kubevirt.controller.decode import decoder_for
from kubevirt.controller.informer import Informer, ListWatcher
from kubevirt.controller.store import IndexFunc
from kubevirt_api.view import JSON

__all__ = ["DEFAULT_RESYNC_SECONDS", "SharedInformerFactory", "jittered_resync"]

T = TypeVar("T")
# KubeVirt's informers resync every 12 to 24 hours (12 h, jittered once per factory).
DEFAULT_RESYNC_SECONDS = 12 * 3600.0


def jittered_resync(base: float) -> float:
    return base * (1 + random.random())


class SharedInformerFactory:
    def __init__(self, client: ListWatcher, *, resync_seconds: float | None = None) -> None:
        self._client = client
        self._resync = jittered_resync(DEFAULT_RESYNC_SECONDS) if resync_seconds is None else resync_seconds
        self._lock = threading.Lock()
        self._informers: dict[tuple[Any, ...], Informer[Any]] = {}
        self._started = False

    @overload
    def informer(
        self,
        resource: Resource,
        decode: type[T],
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        indexers: Mapping[str, IndexFunc] | None = None,
    ) -> Informer[T]: ...

    @overload
    def informer(
        self,
        resource: Resource,
        decode: Callable[[JSON], T],
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        indexers: Mapping[str, IndexFunc] | None = None,
    ) -> Informer[T]: ...

    @overload
    def informer(
        self,
        resource: Resource,
        decode: None = None,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        indexers: Mapping[str, IndexFunc] | None = None,
    ) -> Informer[JSON]: ...

    def informer(
        self,
        resource: Resource,
        decode: Any = None,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        indexers: Mapping[str, IndexFunc] | None = None,
    ) -> Informer[Any]:
        """The shared informer for these arguments; ``decode`` is a kubevirt_api model class (or its
        ``from_dict``) for KubeVirt kinds, None for Kubernetes kinds (plain dicts)."""
        identity = (resource, _decode_identity(decode), namespace, label_selector, field_selector)
        with self._lock:
            informer = self._informers.get(identity)
            if informer is None:
                informer = Informer(
                    self._client,
                    resource,
                    decoder_for(resource, decode),
                    namespace=namespace,
                    label_selector=label_selector,
                    field_selector=field_selector,
                    indexers=indexers,
                    resync_seconds=self._resync,
                )
                self._informers[identity] = informer
                if self._started:
                    informer.start()
            elif indexers:
                informer.add_indexers(indexers)
            return informer

    def start(self) -> None:
        """Starts every informer made so far; later ones start when they are made."""
        with self._lock:
            self._started = True
            informers = list(self._informers.values())
        for informer in informers:
            informer.start()

    def wait_for_cache_sync(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        with self._lock:
            informers = list(self._informers.values())
        return all(informer.wait_for_sync(max(0.0, deadline - time.monotonic())) for informer in informers)

    def stop(self) -> None:
        with self._lock:
            informers = list(self._informers.values())
        for informer in informers:
            informer.stop()


def _decode_identity(decode: Any) -> Any:
    # VirtualMachineInstance and VirtualMachineInstance.from_dict ask for the same informer.
    owner = getattr(decode, "__self__", None)
    if getattr(decode, "__name__", None) == "from_dict" and isinstance(owner, type):
        return owner
    return dict if decode is None else decode
