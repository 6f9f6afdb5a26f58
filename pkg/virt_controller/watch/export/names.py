"""The names and keys the export controller gives and reads (KubeVirt v1.6's ``pkg/storage/export/export``).

Every name is derived from the export's, hashed down to a DNS label when longer (OpenShift's
``naming.GetName``), so that a pass finds what an earlier pass (or KubeVirt's own controller) made.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from kubevirt.admission.k8s_names import LABEL_MAX, bounded_name
from kubevirt.controller import key_for
from kubevirt.export.paths import EXPORT_PREFIX
from kubevirt.virt_controller.services.exporter_pod import EXPORT_API_VERSION, EXPORT_KIND, exporter_pod_name
from kubevirt_api.core.v1.constants import GROUP_NAME
from kubevirt_api.snapshot.v1beta1.types import SNAPSHOT_GROUP_NAME
from kubevirt_api.view import JSON

__all__ = [
    "ANN_CERT_PARAMS",
    "EXPORT_API_VERSION",
    "EXPORT_INDEXERS",
    "EXPORT_KIND",
    "EXPORT_SERVICE_LABEL",
    "PVC_INDEX",
    "PVC_KIND",
    "VMSNAPSHOT_INDEX",
    "VMSNAPSHOT_KIND",
    "VM_INDEX",
    "VM_KIND",
    "default_token_secret_name",
    "export_ca_config_map_name",
    "export_label_value",
    "export_service_name",
    "is_pvc_source",
    "is_vm_source",
    "is_vmsnapshot_source",
    "manifest_config_map_name",
    "owner_export_key",
    "pod_name",
    "pvc_index",
    "vm_index",
    "vmsnapshot_index",
]

# The exporter pod's label its service selects on.
EXPORT_SERVICE_LABEL: Final = "kubevirt.io.virt-export-service"
# The certificate parameters the exporter pod was made with: a change recreates the pod.
ANN_CERT_PARAMS: Final = "kubevirt.io/export.certParameters"

PVC_KIND: Final = "PersistentVolumeClaim"
VM_KIND: Final = "VirtualMachine"
VMSNAPSHOT_KIND: Final = "VirtualMachineSnapshot"

# Indexes of the export informer: exports by the ``namespace/name`` of their source.
PVC_INDEX: Final = "pvc"
VM_INDEX: Final = "vm"
VMSNAPSHOT_INDEX: Final = "vmsnapshot"


def export_service_name(export_name: str) -> str:
    """``virt-export-<name>``: dots are not allowed in a DNS-1035 label."""
    suffix = export_name.replace(".", "-")
    # At exactly this length the hashed form would start with "-" (OpenShift's namer drops the base).
    if len(suffix) == LABEL_MAX - 10:
        suffix = suffix[:-1]
    return bounded_name(EXPORT_PREFIX, suffix, LABEL_MAX)


def pod_name(export_name: str) -> str:
    return exporter_pod_name(EXPORT_PREFIX, export_name)


def export_label_value(export_name: str) -> str:
    """The export's name, or a hashed form when too long for a label value."""
    if len(export_name) <= LABEL_MAX:
        return export_name
    return bounded_name(EXPORT_PREFIX, export_name, LABEL_MAX)


def default_token_secret_name(export_name: str) -> str:
    return bounded_name("export-token", export_name, LABEL_MAX)


def manifest_config_map_name(export_name: str) -> str:
    return f"exporter-vm-manifest-{export_name}"


def export_ca_config_map_name(export_name: str) -> str:
    return f"export-ca-cm-{export_name}"


def _source(export: Mapping[str, Any]) -> JSON:
    return (export.get("spec") or {}).get("source") or {}


def is_pvc_source(export: Mapping[str, Any]) -> bool:
    source = _source(export)
    return source.get("apiGroup") in (None, "") and source.get("kind") == PVC_KIND


def is_vm_source(export: Mapping[str, Any]) -> bool:
    source = _source(export)
    return source.get("apiGroup") == GROUP_NAME and source.get("kind") == VM_KIND


def is_vmsnapshot_source(export: Mapping[str, Any]) -> bool:
    source = _source(export)
    return source.get("apiGroup") == SNAPSHOT_GROUP_NAME and source.get("kind") == VMSNAPSHOT_KIND


def _source_key(export: Mapping[str, Any]) -> list[str]:
    return [key_for((export.get("metadata") or {}).get("namespace"), str(_source(export).get("name") or ""))]


def pvc_index(export: Any) -> list[str]:
    # The informer's index also takes "v1" as the core group (the controller itself does not).
    source = _source(export)
    if source.get("apiGroup") in (None, "", "v1") and source.get("kind") == PVC_KIND:
        return _source_key(export)
    return []


def vm_index(export: Any) -> list[str]:
    return _source_key(export) if is_vm_source(export) else []


def vmsnapshot_index(export: Any) -> list[str]:
    return _source_key(export) if is_vmsnapshot_source(export) else []


EXPORT_INDEXERS: Final = {PVC_INDEX: pvc_index, VM_INDEX: vm_index, VMSNAPSHOT_INDEX: vmsnapshot_index}


def owner_export_key(obj: Mapping[str, Any]) -> str | None:
    """The key of the export controlling ``obj`` (a pod, a service), if one does."""
    meta = obj.get("metadata") or {}
    for ref in meta.get("ownerReferences") or ():
        if ref.get("controller"):
            if ref.get("kind") == EXPORT_KIND and ref.get("apiVersion") == EXPORT_API_VERSION:
                return key_for(meta.get("namespace"), str(ref.get("name")))
            return None
    return None
