"""VirtualMachineSnapshot and VirtualMachineRestore admitters (KubeVirt's ``pkg/storage/admitters``:
``vmsnapshot.go``, ``vmrestore.go``).

Both accept only VirtualMachine sources/targets of ``kubevirt.io`` and freeze the spec once created; a
restore is also checked against the cluster (its snapshot, the snapshotted VM, the target VM and other
restores of the same target), read through :class:`~kubevirt.admission.state.SnapshotState`.
"""

from __future__ import annotations

from kubevirt.admission import causes as c
from kubevirt.admission import response
from kubevirt.admission.causes import StatusCause
from kubevirt.admission.field import Path
from kubevirt.admission.json_fields import flag, has, items, obj, opt_obj, opt_text, text
from kubevirt.admission.response import AdmissionResponse
from kubevirt.admission.review import CREATE, UPDATE
from kubevirt.admission.state import ClusterStateError, SnapshotState
from kubevirt.virt_config import ClusterConfig
from kubevirt_api.core.v1.constants import GROUP_NAME
from kubevirt_api.view import JSON, as_list

SNAPSHOT_FEATURE_GATE = "Snapshot"
SNAPSHOT_GATE_DISABLED = "snapshot feature gate not enabled"
RESTORE_GATE_DISABLED = "Snapshot/Restore feature gate not enabled"
IMMUTABLE_SPEC = "spec in immutable after creation"  # sic, KubeVirt's wording
VOLUME_RESTORE_POLICIES = ("InPlace", "RandomizeNames")
BACKEND_STORAGE_RESTORE = (
    "Restore to a different VM is not supported when snapshotted VM has backend storage "
    "(persistent TPM or EFI)"
)
SPEC = Path("spec")


class RestoreLookupError(Exception):
    """A restore cannot be judged (its snapshot has no content, ...): answered as a 400 error."""


def _reference_causes(reference: JSON, where: Path) -> list[StatusCause]:
    """A snapshot's source or a restore's target must be a ``kubevirt.io`` VirtualMachine (one cause)."""
    group = opt_text(reference, "apiGroup")
    if group is None:
        return [c.not_found(where.child("apiGroup"), "missing apiGroup")]
    if group != GROUP_NAME:
        return [c.invalid(where.child("apiGroup"), "invalid apiGroup")]
    if text(reference, "kind") != "VirtualMachine":
        return [c.invalid(where.child("kind"), "invalid kind")]
    return []


def _immutable_spec_causes(new: JSON, old: JSON) -> list[StatusCause]:
    if obj(new, "spec") != obj(old, "spec"):
        return [c.invalid(SPEC, IMMUTABLE_SPEC)]
    return []


def admit_vm_snapshot(
    operation: str, snapshot: JSON, old: JSON | None, config: ClusterConfig
) -> AdmissionResponse:
    """The answer for a VirtualMachineSnapshot created or updated; ``old`` is needed on updates."""
    if operation == CREATE and not config.enabled(SNAPSHOT_FEATURE_GATE):
        return response.error(SNAPSHOT_GATE_DISABLED)
    if operation == CREATE:
        return response.from_causes(
            _reference_causes(obj(obj(snapshot, "spec"), "source"), SPEC.child("source"))
        )
    if operation == UPDATE:
        return response.from_causes(_immutable_spec_causes(snapshot, old or {}))
    return response.error(f"unexpected operation {operation}")


def _needs_backend_storage(vmi_spec: JSON) -> bool:
    """``IsBackendStorageNeededForVMI``: a persistent TPM or persistent EFI variables."""
    tpm = opt_obj(obj(obj(vmi_spec, "domain"), "devices"), "tpm")
    persistent_tpm = tpm is not None and tpm.get("enabled") is not False and flag(tpm, "persistent")
    efi = obj(obj(obj(obj(vmi_spec, "domain"), "firmware"), "bootloader"), "efi")
    return persistent_tpm or flag(efi, "persistent")


def _patch_causes(restore: JSON) -> list[StatusCause]:
    """Patches may touch labels, annotations and ``/spec/`` only; each is read as KubeVirt does, by
    splitting its text on "," and ":" rather than parsing it as JSON."""
    where = SPEC.child("patches")
    out: list[StatusCause] = []
    for patch in as_list(obj(restore, "spec").get("patches")) or ():
        if not isinstance(patch, str):
            continue
        for pair in patch.strip("{}").split(","):
            key_value = pair.split(":")
            if len(key_value) != 2:
                message = (
                    f'patch format is not valid - one ":" expected in a single key-value json patch: {pair}'
                )
                out.append(c.invalid(where, message))
                continue
            key, value = key_value[0].strip(), key_value[1].strip()
            if key != '"path"' or value.startswith(('"/metadata/labels/', '"/metadata/annotations/')):
                continue
            if not value.startswith('"/spec/'):
                out.append(c.invalid(where, f"patching is valid only for elements under /spec/ only: {pair}"))
    return out


def _target_vm_causes(restore: JSON, namespace: str, state: SnapshotState) -> list[StatusCause]:
    """``validateTargetVM``. As in KubeVirt, a snapshot that does not exist (yet) lets everything pass,
    patch findings included: the restore controller reports it."""
    spec = obj(restore, "spec")
    causes = _patch_causes(restore)
    snapshot = state.get_vm_snapshot(namespace, text(spec, "virtualMachineSnapshotName"))
    if snapshot is None:
        return []
    target = state.get_vm(namespace, text(obj(spec, "target"), "name"))
    snapshot_status = obj(snapshot, "status")
    source_uid = opt_text(snapshot_status, "sourceUID")
    if target is not None and (source_uid is None or text(obj(target, "metadata"), "uid") == source_uid):
        return causes
    content_name = opt_text(snapshot_status, "virtualMachineSnapshotContentName")
    if content_name is None:
        raise RestoreLookupError("snapshot content name is nil in vmSnapshot status")
    content = state.get_vm_snapshot_content(namespace, content_name)
    if content is None:
        raise RestoreLookupError(
            f'virtualmachinesnapshotcontents.snapshot.kubevirt.io "{content_name}" not found'
        )
    snapshot_vm = opt_obj(obj(obj(content, "spec"), "source"), "virtualMachine")
    if snapshot_vm is None:
        raise RestoreLookupError("unexpected snapshot source")
    if _needs_backend_storage(obj(obj(obj(snapshot_vm, "spec"), "template"), "spec")):
        causes.append(c.invalid(SPEC, BACKEND_STORAGE_RESTORE))
    return causes


def _override_causes(restore: JSON) -> list[StatusCause]:
    where = SPEC.child("volumeRestoreOverrides")
    out: list[StatusCause] = []
    for i, override in enumerate(items(obj(restore, "spec"), "volumeRestoreOverrides")):
        if not text(override, "volumeName"):
            out.append(c.required(where.index(i).child("volumeName"), "must provide a volume name"))
        if (
            not text(override, "restoreName")
            and not has(override, "annotations")
            and not has(override, "labels")
        ):
            out.append(c.required(where.index(i), "must provide at least one overriden field"))
    return out


def _restore_policy_causes(restore: JSON) -> list[StatusCause]:
    policy = opt_text(obj(restore, "spec"), "volumeRestorePolicy")
    if policy is None or policy in VOLUME_RESTORE_POLICIES:
        return []
    message = f'volume restore policy "{policy}" doesn\'t exist'
    return [c.invalid(SPEC.child("volumeRestorePolicy"), message)]


def _target_key(restore: JSON) -> tuple[str | None, str, str]:
    """``spec.target`` as Go compares it: an unset apiGroup differs from an empty one."""
    target = obj(obj(restore, "spec"), "target")
    return opt_text(target, "apiGroup"), text(target, "kind"), text(target, "name")


def _in_progress_causes(restore: JSON, others: list[JSON]) -> list[StatusCause]:
    """Every unfinished restore of the same target refuses a new one."""
    key = _target_key(restore)
    return [
        c.invalid(
            SPEC.child("target"),
            f'VirtualMachineRestore "{text(obj(other, "metadata"), "name")}" in progress',
        )
        for other in others
        if _target_key(other) == key and not flag(obj(other, "status"), "complete")
    ]


def vm_restore_create_causes(restore: JSON, namespace: str, state: SnapshotState) -> list[StatusCause]:
    """The causes for a new restore, in KubeVirt's order. ``namespace`` is the request's: the object's
    own namespace is used for its snapshot and target, the request's for the other restores.

    Raises :class:`ClusterStateError` or :class:`RestoreLookupError` when the restore cannot be judged.
    """
    target = obj(obj(restore, "spec"), "target")
    causes = _reference_causes(target, SPEC.child("target"))
    if not causes:
        own_namespace = text(obj(restore, "metadata"), "namespace") or namespace
        causes = _target_vm_causes(restore, own_namespace, state)
        causes += _override_causes(restore)
        causes += _restore_policy_causes(restore)
    return causes + _in_progress_causes(restore, state.list_vm_restores(namespace))


def admit_vm_restore(
    operation: str,
    restore: JSON,
    old: JSON | None,
    namespace: str,
    config: ClusterConfig,
    state: SnapshotState,
) -> AdmissionResponse:
    """The answer for a VirtualMachineRestore created or updated; ``old`` is needed on updates."""
    if operation == CREATE and not config.enabled(SNAPSHOT_FEATURE_GATE):
        return response.error(RESTORE_GATE_DISABLED)
    if operation == CREATE:
        try:
            return response.from_causes(vm_restore_create_causes(restore, namespace, state))
        except (ClusterStateError, RestoreLookupError) as err:
            return response.error(str(err))
    if operation == UPDATE:
        return response.from_causes(_immutable_spec_causes(restore, old or {}))
    return response.error(f"unexpected operation {operation}")
