"""Migration admitters (``migration-create-admitter.go``, ``migration-update-admitter.go``) and mutator."""

from __future__ import annotations

import copy

from kubevirt.admission import causes as c
from kubevirt.admission import response
from kubevirt.admission.field import Path
from kubevirt.admission.json_fields import has, items, obj, string_map, text
from kubevirt.admission.response import AdmissionResponse
from kubevirt.admission.state import ClusterState, ClusterStateError
from kubevirt.virt_config import ClusterConfig
from kubevirt_api.core.v1 import FINAL_MIGRATION_PHASES, FINAL_VMI_PHASES
from kubevirt_api.view import JSON

MIGRATION_SELECTOR_LABEL = "kubevirt.io/vmi-name"
MIGRATION_FINALIZER = "kubevirt.io/migrationJobFinalize"


def _is_final(migration: JSON) -> bool:
    return text(obj(migration, "status"), "phase") in FINAL_MIGRATION_PHASES


def mutate_migration(migration: JSON) -> JSON:
    """The selector label and the finalizer every migration gets on creation."""
    out = copy.deepcopy(migration)
    metadata = out.setdefault("metadata", {})
    if not isinstance(metadata, dict):
        metadata = out["metadata"] = {}
    labels = metadata.get("labels")
    if not isinstance(labels, dict):
        labels = metadata["labels"] = {}
    labels[MIGRATION_SELECTOR_LABEL] = text(obj(out, "spec"), "vmiName")
    finalizers = metadata.get("finalizers")
    if not isinstance(finalizers, list):
        finalizers = metadata["finalizers"] = []
    if MIGRATION_FINALIZER not in finalizers:
        finalizers.append(MIGRATION_FINALIZER)
    return out


def admit_migration_create(
    migration: JSON, namespace: str, config: ClusterConfig, state: ClusterState
) -> AdmissionResponse:
    spec = obj(migration, "spec")
    vmi_name = text(spec, "vmiName")
    if not vmi_name:
        return response.invalid([c.required(Path("spec", "vmiName"), "vmiName is missing")])
    if (has(spec, "sendTo") or has(spec, "receive")) and not config.enabled("DecentralizedLiveMigration"):
        return response.error("DecentralizedLiveMigration feature gate is not enabled in kubevirt resource")
    namespace = text(obj(migration, "metadata"), "namespace") or namespace
    try:
        vmi = state.get_vmi(namespace, vmi_name)
    except ClusterStateError as err:
        return response.error(str(err))
    if vmi is None:
        return response.error(f'the VMI "{namespace}/{vmi_name}" does not exist')
    if text(obj(vmi, "status"), "phase") in FINAL_VMI_PHASES:
        return response.error("Cannot migrate VMI in finalized state.")
    for condition in items(obj(vmi, "status"), "conditions"):
        if text(condition, "type") == "LiveMigratable" and text(condition, "status") == "False":
            reason, message = text(condition, "reason"), text(condition, "message")
            return response.error(f"Cannot migrate VMI, Reason: {reason}, Message: {message}")
    try:
        others = state.list_migrations(namespace, vmi_name)
    except ClusterStateError as err:
        return response.error(str(err))
    for other in others:
        if _is_final(other):
            continue
        uid = text(obj(other, "metadata"), "uid")
        return response.error(
            f"in-flight migration detected. Active migration job ({uid}) is currently already in progress "
            f"for VMI {text(obj(other, 'spec'), 'vmiName')}."
        )
    return response.allowed()


def admit_migration_update(new: JSON, old: JSON) -> AdmissionResponse:
    if obj(new, "spec") != obj(old, "spec"):
        return response.invalid([c.not_supported("", "update of Migration object's spec is restricted")])
    old_meta, new_meta = obj(old, "metadata"), obj(new, "metadata")
    if not _is_final(new) and old_meta.get("labels") is not None:
        old_labels = string_map(old_meta, "labels")
        if MIGRATION_SELECTOR_LABEL in old_labels:
            if new_meta.get("labels") is None:
                message = "selector label can't be removed from an in-flight migration"
                return response.invalid([c.not_supported("", message)])
            new_labels = string_map(new_meta, "labels")
            if new_labels.get(MIGRATION_SELECTOR_LABEL) != old_labels[MIGRATION_SELECTOR_LABEL]:
                message = "selector label can't be modified on an in-flight migration"
                return response.invalid([c.not_supported("", message)])
    return response.allowed()
