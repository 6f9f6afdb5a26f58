"""The cluster-dependent part of installing the project's DataVolume importer (the ``DataImporter`` gate).

The importer is installed only where CDI itself is not: a ``cdi.kubevirt.io`` CRD of the ones it would
install that does not carry the operator's label is CDI's, and then the gate installs nothing (said once
in the log). Once its CRDs are served, the CDI object KubeVirt reads is created if there is none; after
that it is the users' (the operator never writes it again, so their ``spec.config`` edits stay).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from kubevirt.client import JSON, AlreadyExistsError, KubeApi, Resource
from kubevirt.client.resources import CDIS
from kubevirt.log import get_logger
from kubevirt.virt_operator.apply import CacheLookup
from kubevirt.virt_operator.resource import cdi
from kubevirt.virt_operator.resource.config import DATA_IMPORTER_GATE, InstallConfig
from kubevirt.virt_operator.resource.metadata import is_managed

_log = get_logger()
CrdLookup = Callable[[str], JSON | None]


def no_crds(_name: str) -> JSON | None:
    return None


class DataImporter:
    """``crd_named`` reads a CRD by name whoever manages it; ``synced`` says whether a resource's cache
    holds what the cluster has (the CDI objects' informer starts once their CRD exists)."""

    def __init__(
        self, api: KubeApi, caches: CacheLookup, synced: Callable[[Resource], bool], crd_named: CrdLookup
    ) -> None:
        self._api = api
        self._caches = caches
        self._synced = synced
        self._crd_named = crd_named
        self._reported_cdi = False

    def cdis_crds(self) -> list[str]:
        """The names of the CRDs the importer would install that CDI installed."""
        return [
            name
            for name in cdi.crd_names()
            if (crd := self._crd_named(name)) is not None and not is_managed(crd)
        ]

    def resolve(self, config: InstallConfig) -> InstallConfig:
        """``config`` with the importer off when CDI serves its API on this cluster."""
        if not config.data_importer:
            return config
        taken = self.cdis_crds()
        if not taken:
            self._reported_cdi = False
            return config
        if not self._reported_cdi:
            _log.warning(
                "CDI serves the cdi.kubevirt.io API: the DataVolume importer is not installed",
                gate=DATA_IMPORTER_GATE,
                crds=taken,
            )
            self._reported_cdi = True
        return dataclasses.replace(config, data_importer=False)

    def ensure_cdi_object(self) -> bool:
        """Creates the CDI object when there is none; False while the CDI objects' cache is not synced
        yet (the caller looks again shortly)."""
        if not self._synced(CDIS):
            return False
        if self._caches(CDIS).list():
            return True
        body = cdi.cdi_cr()
        try:
            self._api.create(CDIS, None, body)
            _log.info("created", kind="CDI", name=body["metadata"]["name"])
        except AlreadyExistsError:
            pass  # made meanwhile; the cache reports it
        return True
