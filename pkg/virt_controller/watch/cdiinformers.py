"""CDI's informers (DataVolumes, CDI, CDIConfig), started once CDI's CRDs are served.

KubeVirt's virt-controller watches DataVolumes only when CDI is installed (a stand-in informer that
never sees one otherwise) and restarts when CDI appears; here each informer starts when its CRD is
served (see :mod:`.crdinformers`). Until it has listed, its cache counts as absent, so no controller
takes an empty cache for "no DataVolume exists".
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubevirt.client.resources import CDI_CONFIGS, CDIS, DATA_VOLUMES
from kubevirt.controller import SharedInformerFactory, Store
from kubevirt.virt_controller.watch.crdinformers import Connect, CrdGatedInformers
from kubevirt_api.view import JSON


class CdiInformers(CrdGatedInformers):
    def __init__(self, factory: SharedInformerFactory) -> None:
        super().__init__(factory, (DATA_VOLUMES, CDIS, CDI_CONFIGS))

    def on_data_volumes(self, connect: Connect) -> None:
        """``connect`` is called with the DataVolume informer when it starts (handlers go there)."""
        self.on_started(DATA_VOLUMES, connect)

    def data_volumes(self) -> Store[JSON] | None:
        return self.synced_store(DATA_VOLUMES)

    def cdis(self) -> list[JSON]:
        store = self.synced_store(CDIS)
        return store.list() if store is not None else []

    def cdi_config(self, name: str) -> Mapping[str, Any] | None:
        store = self.synced_store(CDI_CONFIGS)
        return store.get_by_key(name) if store is not None else None
