"""CDI's DataVolumes as virt-controller reads them (plain JSON of ``cdi.kubevirt.io/v1beta1``).

A VM's ``dataVolumeTemplates`` become DataVolumes the VM owns (:func:`data_volume_from_template`);
the VM and its VMI wait until their claims are populated. CDI's phases and conditions are the
contract: ``Succeeded`` (or ``PendingPopulation``, a populator waiting for a consumer) means ready,
``WaitForFirstConsumer`` means the claim binds only once a pod uses it, ``Failed`` is final, and the
``Running`` and ``Bound`` conditions carry the importer's errors.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Final

from kubevirt.client.resources import DATA_VOLUMES
from kubevirt.controller import Store, key_for
from kubevirt.virt_controller.watch.common import controller_ref_of_dict, owner_reference
from kubevirt.virt_controller.watch.conditions import FALSE, TRUE
from kubevirt_api.cdi.constants import Annotation, ConditionType, Phase, Reason
from kubevirt_api.core.v1 import (
    DataVolumeTemplateSpec,
    VirtualMachine,
    VirtualMachineInstanceCondition,
    VirtualMachineInstanceConditionType,
    Volume,
)
from kubevirt_api.core.v1.constants import (
    API_VERSION,
    CREATED_BY_LABEL,
    VIRTUAL_MACHINE_INSTANCE_REASON_ALL_DVS_READY,
    VIRTUAL_MACHINE_INSTANCE_REASON_NOT_ALL_DVS_READY,
)
from kubevirt_api.view import JSON

SUCCEEDED: Final = Phase.SUCCEEDED
FAILED: Final = Phase.FAILED
PENDING: Final = Phase.PENDING
WAIT_FOR_FIRST_CONSUMER: Final = Phase.WAIT_FOR_FIRST_CONSUMER
PENDING_POPULATION: Final = Phase.PENDING_POPULATION
POPULATED_PHASES: Final = (SUCCEEDED, PENDING_POPULATION)
CONDITION_READY: Final = ConditionType.READY
CONDITION_BOUND: Final = ConditionType.BOUND
CONDITION_RUNNING: Final = ConditionType.RUNNING
UNKNOWN: Final = Phase.UNKNOWN
# Lets CDI take over a claim of the DataVolume's name that already exists.
ALLOW_CLAIM_ADOPTION_ANNOTATION: Final = Annotation.ALLOW_CLAIM_ADOPTION
DATA_VOLUME_API_VERSION: Final = DATA_VOLUMES.api_version
_IMPORTER_ERROR_REASONS: Final = (Reason.ERROR, Reason.IMAGE_PULL_FAILED)
_EXCEEDED_QUOTA_REASON: Final = Reason.EXCEEDED_QUOTA

# A DataVolume (or claim) by namespace and name; None when it is not in the cache.
Finder = Callable[[str | None, str], Mapping[str, Any] | None]
# The DataVolume cache; None while CDI's DataVolume kind is not served (then none exist).
DataVolumeCache = Callable[[], Store[Any] | None]
# A DataSource by namespace and name; raises when it cannot be read.
DataSourceReader = Callable[[str, str], Mapping[str, Any]]


def finder(cache: DataVolumeCache) -> Finder:
    """Looks DataVolumes up in the cache that ``cache`` gives at the time."""

    def find(namespace: str | None, name: str) -> Mapping[str, Any] | None:
        store = cache()
        return store.get_by_key(key_for(namespace, name)) if store is not None else None

    return find


def phase(dv: Mapping[str, Any]) -> str:
    return str((dv.get("status") or {}).get("phase") or "")


def condition(dv: Mapping[str, Any], type_: str) -> Mapping[str, Any] | None:
    for entry in (dv.get("status") or {}).get("conditions") or ():
        if entry.get("type") == type_:
            return entry  # type: ignore[no-any-return]
    return None


def name_of(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name") or "")


# -- made from a VM's templates --------------------------------------------------------------------


def data_volume_from_template(
    template: DataVolumeTemplateSpec, vm: VirtualMachine, read_data_source: DataSourceReader
) -> JSON:
    """KubeVirt's ``CreateDataVolumeManifest``: the template's metadata and spec, CDI's claim-adoption
    annotation, the VM template's priority class, a clone source resolved to a namespaced PVC or
    snapshot, and the VM as controlling owner. Raises what ``read_data_source`` raises."""
    meta = vm.metadata
    assert meta is not None
    metadata: JSON = template.metadata.to_dict() if template.metadata is not None else {}
    metadata["labels"] = {**(metadata.get("labels") or {}), CREATED_BY_LABEL: meta.uid or ""}
    metadata["annotations"] = {**(metadata.get("annotations") or {}), ALLOW_CLAIM_ADOPTION_ANNOTATION: "true"}
    metadata["ownerReferences"] = [
        owner_reference(API_VERSION, "VirtualMachine", meta.name or "", meta.uid or "").to_dict()
    ]
    spec: JSON = template.spec.to_dict()
    template_spec = vm.spec.template.spec
    priority = template_spec.priority_class_name if template_spec is not None else None
    if not spec.get("priorityClassName") and priority:
        spec["priorityClassName"] = priority
    source = resolved_clone_source(meta.namespace or "", spec, read_data_source)
    if source is not None:
        spec.pop("sourceRef", None)
        spec["source"] = source
    return {"apiVersion": DATA_VOLUME_API_VERSION, "kind": "DataVolume", "metadata": metadata, "spec": spec}


def resolved_clone_source(
    namespace: str, spec: Mapping[str, Any], read_data_source: DataSourceReader
) -> JSON | None:
    """KubeVirt's ``GetResolvedCloneSource``: the PVC or snapshot a DataVolume clones from, with its
    namespace filled in (a DataSource reference is followed); None when it clones nothing."""
    source = copy.deepcopy(spec.get("source"))
    ref = spec.get("sourceRef") or {}
    if ref.get("kind") == "DataSource":
        namespace = ref.get("namespace") or namespace
        data_source = read_data_source(namespace, str(ref.get("name") or ""))
        resolved = (data_source.get("spec") or {}).get("source") or {}
        if resolved.get("dataSource") is not None:
            resolved = (data_source.get("status") or {}).get("source") or {}
        source = {key: copy.deepcopy(resolved[key]) for key in ("pvc", "snapshot") if resolved.get(key)}
    if not source:
        return None
    for key in ("pvc", "snapshot"):
        if source.get(key) is not None:
            if not source[key].get("namespace"):
                source[key]["namespace"] = namespace
            return source  # type: ignore[no-any-return]
    return None


def exceeded_quota_message(dv: Mapping[str, Any]) -> str | None:
    """KubeVirt's ``HasDataVolumeExceededQuotaError``: CDI reports a quota refusal on ``Bound``."""
    bound = condition(dv, CONDITION_BOUND)
    if bound is not None and bound.get("status") != TRUE and bound.get("reason") == _EXCEEDED_QUOTA_REASON:
        return (
            f"DataVolume {name_of(dv)} importer is not running due to an error: {bound.get('message') or ''}"
        )
    return None


# -- the VM's printable status ---------------------------------------------------------------------


def _template_data_volumes(
    namespace: str | None, volumes: Iterable[Volume], find: Finder
) -> Iterable[tuple[str, Mapping[str, Any]]]:
    for volume in volumes:
        if volume.data_volume is None:
            continue
        dv = find(namespace, volume.data_volume.name)
        if dv is not None:
            yield volume.data_volume.name, dv


def data_volume_error(namespace: str | None, volumes: Iterable[Volume], find: Finder) -> str | None:
    """KubeVirt's ``HasDataVolumeErrors``: the first DataVolume volume that failed or whose importer
    stopped on an error."""
    for name, dv in _template_data_volumes(namespace, volumes, find):
        if phase(dv) == FAILED:
            return f"DataVolume {name} is in Failed phase"
        running = condition(dv, CONDITION_RUNNING)
        if (
            running is not None
            and running.get("status") == FALSE
            and running.get("reason") in _IMPORTER_ERROR_REASONS
        ):
            message = running.get("message") or ""
            return f"DataVolume {name} importer has stopped running due to an error: {message}"
    return None


def data_volume_provisioning(namespace: str | None, volumes: Iterable[Volume], find: Finder) -> bool:
    """KubeVirt's ``HasDataVolumeProvisioning``: a DataVolume volume is being populated (one waiting,
    unbound, for its first consumer is not)."""
    for _, dv in _template_data_volumes(namespace, volumes, find):
        current = phase(dv)
        if current in POPULATED_PHASES:
            continue
        bound = condition(dv, CONDITION_BOUND)
        if (bound is not None and bound.get("status") == TRUE) or current != WAIT_FOR_FIRST_CONSUMER:
            return True
    return False


# -- a VMI's volumes -------------------------------------------------------------------------------


def controlling_data_volume(pvc: Mapping[str, Any]) -> str | None:
    """The name of the DataVolume that controls a claim, if one does."""
    ref = controller_ref_of_dict(pvc)
    return str(ref.get("name")) if ref is not None and ref.get("kind") == "DataVolume" else None


def claim_readiness(namespace: str | None, pvc: Mapping[str, Any], find_dv: Finder) -> tuple[bool, bool]:
    """(populated, waits for its first consumer) of a claim: CDI's ``IsSucceededOrPendingPopulation``
    and ``IsWaitForFirstConsumerBeforePopulating``. A claim of no DataVolume counts as populated.
    Raises LookupError when its DataVolume is not in the cache."""
    owner = controlling_data_volume(pvc)
    if owner is None:
        return True, False
    dv = find_dv(namespace, owner)
    if dv is None:
        raise LookupError(f"unable to find datavolume {namespace}/{owner}")
    current = phase(dv)
    return current in POPULATED_PHASES, current == WAIT_FOR_FIRST_CONSUMER


def data_volumes_of_volumes(
    namespace: str | None, volumes: Iterable[Volume], find_pvc: Finder, find_dv: Finder
) -> list[Mapping[str, Any]]:
    """KubeVirt's ``ListDataVolumesFromVolumes``: the cached DataVolumes of DataVolume volumes and of
    claims a DataVolume controls."""
    found: list[Mapping[str, Any]] = []
    for volume in volumes:
        name: str | None = None
        if volume.persistent_volume_claim is not None:
            pvc = find_pvc(namespace, volume.persistent_volume_claim.claim_name)
            name = controlling_data_volume(pvc) if pvc is not None else None
        elif volume.data_volume is not None:
            name = volume.data_volume.name
        dv = find_dv(namespace, name) if name else None
        if dv is not None:
            found.append(dv)
    return found


def data_volumes_ready_condition(dvs: Sequence[Mapping[str, Any]]) -> VirtualMachineInstanceCondition | None:
    """KubeVirt's ``aggregateDataVolumesConditions``: True when every DataVolume is Ready, False when
    one is not, Unknown when none says False but one does not say; None without DataVolumes."""
    if not dvs:
        return None
    status = TRUE
    for dv in dvs:
        ready = condition(dv, CONDITION_READY)
        own = str(ready.get("status")) if ready is not None else UNKNOWN
        if own == FALSE or (own != TRUE and status == TRUE):
            status = own
    if status == TRUE:
        return VirtualMachineInstanceCondition(
            type=VirtualMachineInstanceConditionType.DATA_VOLUMES_READY,
            status=TRUE,
            reason=VIRTUAL_MACHINE_INSTANCE_REASON_ALL_DVS_READY,
            message="All of the VMI's DVs are bound and ready",
        )
    return VirtualMachineInstanceCondition(
        type=VirtualMachineInstanceConditionType.DATA_VOLUMES_READY,
        status=status,
        reason=VIRTUAL_MACHINE_INSTANCE_REASON_NOT_ALL_DVS_READY,
        message="Not all of the VMI's DVs are ready",
    )
