"""VirtualMachineInstancePresets for the VMI mutating webhook, kept by one informer over every namespace.

KubeVirt's virt-api reads presets from a shared informer, so a VMI create costs the API server no LIST.
The informer lists once, then watches; a broken watch is resumed from the last version seen, and an
expired version (410 Gone) or a failed list or watch leads to a fresh list with backoff (see
:mod:`kubevirt.controller.informer`). Until that first list has landed the cache answers nothing, and
the caller asks the API server instead.
"""

from __future__ import annotations

from kubevirt.client.resources import VIRTUAL_MACHINE_INSTANCE_PRESETS
from kubevirt.controller.factory import SharedInformerFactory
from kubevirt.controller.informer import ListWatcher
from kubevirt.controller.store import NAMESPACE_INDEX
from kubevirt_api.view import JSON

__all__ = ["PresetCache"]


def _name(preset: JSON) -> str:
    return str((preset.get("metadata") or {}).get("name") or "")


class PresetCache:
    """Every namespace's presets, as the plain JSON objects a LIST returns (without managedFields)."""

    def __init__(self, client: ListWatcher) -> None:
        # No handlers read this informer, so a periodic resync would only wake a thread for nothing.
        self._factory = SharedInformerFactory(client, resync_seconds=0)
        self._informer = self._factory.informer(VIRTUAL_MACHINE_INSTANCE_PRESETS)

    def start(self) -> None:
        """Lists and watches on the informer's own thread; returns at once."""
        self._factory.start()

    def stop(self) -> None:
        self._factory.stop()

    def has_synced(self) -> bool:
        return self._informer.has_synced()

    def in_namespace(self, namespace: str) -> list[JSON] | None:
        """The namespace's presets in name order (a LIST's order), or ``None`` before the first list.

        The objects are the cache's own, shared with every review: callers must not change them.
        """
        if not self._informer.has_synced():
            return None
        return sorted(self._informer.store.by_index(NAMESPACE_INDEX, namespace), key=_name)
