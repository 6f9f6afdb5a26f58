"""The informer caches the controllers read, and the cluster-wide facts derived from them: storage classes
(named, virtualization default, Kubernetes default), StorageProfiles, the CDIConfig and its gates."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kubevirt.cdi_controller import meta
from kubevirt.controller import Store
from kubevirt_api.cdi import constants as cdi
from kubevirt_api.view import JSON


@dataclass
class Caches:
    data_volumes: Store[JSON] = field(default_factory=Store)
    pvcs: Store[JSON] = field(default_factory=Store)
    pods: Store[JSON] = field(default_factory=Store)
    storage_classes: Store[JSON] = field(default_factory=Store)
    storage_profiles: Store[JSON] = field(default_factory=Store)
    cdi_configs: Store[JSON] = field(default_factory=Store)
    cdis: Store[JSON] = field(default_factory=Store)
    volume_snapshot_classes: Store[JSON] = field(default_factory=Store)
    services: Store[JSON] = field(default_factory=Store)  # the upload servers' only

    def config(self) -> Mapping[str, Any] | None:
        return self.cdi_configs.get_by_key(cdi.CDI_CONFIG_NAME)

    def config_status(self) -> Mapping[str, Any]:
        config = self.config()
        return (config or {}).get("status") or {}

    def honor_wait_for_first_consumer(self) -> bool:
        """CDI's gate, read from CDIConfig ``spec.featureGates``. The project's install turns it on, so
        a CDIConfig without the list (or no CDIConfig yet) counts as having it."""
        config = self.config()
        gates = ((config or {}).get("spec") or {}).get("featureGates")
        return gates is None or cdi.HONOR_WAIT_FOR_FIRST_CONSUMER in gates

    def storage_profile(self, class_name: str) -> Mapping[str, Any] | None:
        return self.storage_profiles.get_by_key(class_name)

    def storage_class(
        self, class_name: str | None, content_type: str = cdi.CONTENT_TYPE_ARCHIVE
    ) -> JSON | None:
        """The named class (None when it does not exist), else the default one: for kubevirt content the
        virtualization default first, then Kubernetes' default (CDI's GetStorageClassByName*Fallback)."""
        if class_name is not None:
            return self.storage_classes.get_by_key(class_name)
        classes = self.storage_classes.list()
        if content_type == cdi.CONTENT_TYPE_KUBEVIRT:
            virt_default = _newest_default(classes, cdi.DEFAULT_VIRT_STORAGE_CLASS)
            if virt_default is not None:
                return virt_default
        return _newest_default(classes, cdi.DEFAULT_STORAGE_CLASS)

    def default_storage_class_name(self) -> str | None:
        found = _newest_default(self.storage_classes.list(), cdi.DEFAULT_STORAGE_CLASS)
        return meta.name(found) if found is not None else None

    def filesystem_overhead(self, class_name: str | None) -> str:
        """The overhead of a Filesystem claim of ``class_name`` (None: the default class), as CDIConfig
        status says: per class, else global; "0" before the CDIConfig is reconciled."""
        if class_name == "":
            return "0"
        config = self.config()
        if config is None:
            return "0"
        overhead = (config.get("status") or {}).get("filesystemOverhead")
        target = self.storage_class(class_name) or self.storage_class(None)
        if not overhead:
            return "0"
        global_overhead = str(overhead.get("global") or "0")
        if target is None:
            return global_overhead
        per_class = overhead.get("storageClass") or {}
        return str(per_class.get(meta.name(target), global_overhead))

    def claim_overhead(self, spec: Mapping[str, Any]) -> str:
        """A claim's overhead: none for Block."""
        if meta.volume_mode(spec) != meta.FILESYSTEM:
            return "0"
        return self.filesystem_overhead(meta.storage_class_name(spec))


def _newest_default(classes: list[JSON], annotation: str) -> JSON | None:
    # Kubernetes' rule when several are marked: the newest wins, then the first name.
    marked = [sc for sc in classes if meta.annotations_of(sc).get(annotation) == "true"]
    if not marked:
        return None
    marked.sort(key=meta.name)
    marked.sort(key=lambda sc: str(meta.meta(sc).get("creationTimestamp") or ""), reverse=True)
    return marked[0]
