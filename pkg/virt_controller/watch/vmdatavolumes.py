"""The DataVolumes of a VM's ``dataVolumeTemplates``: created, owned and waited for by the VM controller
(KubeVirt's ``handleDataVolumes``).

Each template becomes a DataVolume of its name unless one exists; clones of another namespace's PVC or
snapshot are first authorized for the VM's service account. The VM starts its VMI only once every
DataVolume is populated or waits for its first consumer (the VMI's pod is that consumer).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from kubevirt.client import EventSink, KubeApi
from kubevirt.client.errors import AlreadyExistsError
from kubevirt.client.resources import DATA_SOURCES, DATA_VOLUMES
from kubevirt.controller import Store, UIDTrackingControllerExpectations, key_for
from kubevirt.log import get_logger
from kubevirt.virt_controller.watch.cloneauth import CloneAuthError, CloneAuthorizer
from kubevirt.virt_controller.watch.common import controller_ref_of_dict, describe_api_error, owner_reference
from kubevirt.virt_controller.watch.datavolumes import (
    FAILED,
    PENDING,
    POPULATED_PHASES,
    WAIT_FOR_FIRST_CONSUMER,
    DataVolumeCache,
    data_volume_error,
    data_volume_from_template,
    data_volume_provisioning,
    exceeded_quota_message,
    finder,
    name_of,
    phase,
)
from kubevirt.virt_controller.watch.refmanager import adopt
from kubevirt_api.core.v1 import DataVolumeTemplateSpec, VirtualMachine, Volume
from kubevirt_api.core.v1.constants import API_VERSION
from kubevirt_api.k8s.meta_v1 import ObjectMeta

UNAUTHORIZED_DATA_VOLUME_CREATE_REASON: Final = "UnauthorizedDataVolumeCreate"
FAILED_DATA_VOLUME_CREATE_REASON: Final = "FailedDataVolumeCreate"
SUCCESSFUL_DATA_VOLUME_CREATE_REASON: Final = "SuccessfulDataVolumeCreate"
FAILED_DATA_VOLUME_IMPORT_REASON: Final = "FailedDataVolumeImport"
SOURCE_PVC_NOT_AVAILABLE_REASON: Final = "SourcePVCNotAvailabe"  # KubeVirt's spelling
_READY_PHASES: Final = (*POPULATED_PHASES, WAIT_FOR_FIRST_CONSUMER)
_DEFAULT_SERVICE_ACCOUNT: Final = "default"


class DataVolumeSyncError(Exception):
    """Creating a VM's DataVolumes failed; the message is KubeVirt's."""


@dataclass(frozen=True)
class _Owned:
    """A DataVolume's metadata as the reference manager patches it."""

    metadata: ObjectMeta


class VMDataVolumes:
    """Creates and adopts the DataVolumes of VMs' templates and reports on those the VMs use."""

    def __init__(
        self,
        *,
        api: KubeApi,
        events: EventSink,
        expectations: UIDTrackingControllerExpectations,
        data_volumes: DataVolumeCache,
        pvc_store: Store[Any] | None,
        authorizer: CloneAuthorizer | None = None,
    ) -> None:
        self._api = api
        self._events = events
        self._expectations = expectations
        self.find = finder(data_volumes)
        self._pvcs = pvc_store
        self._authorizer = authorizer or CloneAuthorizer.over(api)
        self._log = get_logger(controller="vm")

    def _find_pvc(self, namespace: str | None, name: str) -> Mapping[str, Any] | None:
        return self._pvcs.get_by_key(key_for(namespace, name)) if self._pvcs is not None else None

    # -- the printable status --------------------------------------------------------------------------

    def error(self, vm: VirtualMachine) -> str | None:
        """Why a DataVolume the VM's template uses failed (the printable status DataVolumeError)."""
        return data_volume_error(_namespace(vm), _template_volumes(vm), self.find)

    def provisioning(self, vm: VirtualMachine) -> bool:
        """A DataVolume the VM's template uses is being populated (the printable status Provisioning)."""
        return data_volume_provisioning(_namespace(vm), _template_volumes(vm), self.find)

    # -- ownership -------------------------------------------------------------------------------------

    def claim(self, vm: VirtualMachine) -> None:
        """Orphaned DataVolumes named like a template are adopted (``ClaimMatchedDataVolumes``)."""
        meta = vm.metadata
        if meta is None or meta.deletion_timestamp is not None:
            return
        owner = owner_reference(API_VERSION, "VirtualMachine", meta.name or "", meta.uid or "")
        for name in _template_names(vm):
            dv = self.find(meta.namespace, name)
            if dv is None or controller_ref_of_dict(dv) is not None:
                continue
            if (dv.get("metadata") or {}).get("deletionTimestamp") is not None:
                continue
            adopt(self._api, DATA_VOLUMES, _Owned(ObjectMeta.from_dict(dict(dv["metadata"]))), owner)

    # -- creation --------------------------------------------------------------------------------------

    def ensure(self, vm: VirtualMachine, key: str) -> bool:
        """Creates the templates' missing DataVolumes; True once each exists and is populated or waits
        for its first consumer. Raises DataVolumeSyncError with KubeVirt's message."""
        ready = True
        namespace = _namespace(vm)
        for template in vm.spec.data_volume_templates or ():
            name = template.metadata.name if template.metadata is not None else None
            current = self.find(namespace, name or "")
            if current is None:
                ready = False
                self._create(vm, template, key)
                continue
            current_phase = phase(current)
            if current_phase in _READY_PHASES:
                continue
            if current_phase == FAILED:
                message = f"DataVolume {name} failed to import disk image"
                self._events.event(vm, "Warning", FAILED_DATA_VOLUME_IMPORT_REASON, message)
            elif current_phase == PENDING and (quota := exceeded_quota_message(current)) is not None:
                message = f"DataVolume {name} exceeds quota limits"
                self._events.event(vm, "Warning", FAILED_DATA_VOLUME_IMPORT_REASON, message)
                raise DataVolumeSyncError(quota)
            ready = False
        return ready

    def _create(self, vm: VirtualMachine, template: DataVolumeTemplateSpec, key: str) -> None:
        namespace = _namespace(vm)
        name = template.metadata.name if template.metadata is not None else ""
        claim_exists = self._find_pvc(namespace, name or "") is not None
        try:
            dv = data_volume_from_template(template, vm, self._read_data_source)
        except Exception as err:
            raise DataVolumeSyncError(
                f"unable to create DataVolume manifest: {describe_api_error(err)}"
            ) from err
        self._check_clone(vm, dv)
        self._expectations.expect_creations(key, 1)
        try:
            created = self._api.create(DATA_VOLUMES, namespace, dv)
        except Exception as err:
            self._expectations.creation_observed(key)
            if claim_exists and isinstance(err, AlreadyExistsError):
                # A CDI too old to adopt the claim of the same name: the claim is used as it is.
                self._log.warning("the DataVolume's claim exists already", key=key, data_volume=name)
                return
            message = describe_api_error(err)
            self._events.event(
                vm,
                "Warning",
                FAILED_DATA_VOLUME_CREATE_REASON,
                f"Error creating DataVolume {name}: {message}",
            )
            raise DataVolumeSyncError(f"failed to create DataVolume: {message}") from err
        self._events.event(
            vm, "Normal", SUCCESSFUL_DATA_VOLUME_CREATE_REASON, f"Created DataVolume {name_of(created)}"
        )

    def _read_data_source(self, namespace: str, name: str) -> Mapping[str, Any]:
        return self._api.get(DATA_SOURCES, namespace, name)

    def _check_clone(self, vm: VirtualMachine, dv: Mapping[str, Any]) -> None:
        """KubeVirt's ``handleCloneDataVolume``: a reference left unresolved is refused, a missing source
        PVC is only reported (the clone waits for it), and the service account must be allowed."""
        spec = dv.get("spec") or {}
        if spec.get("sourceRef") is not None:
            raise DataVolumeSyncError("DataVolume sourceRef not supported")
        source = spec.get("source")
        if not source:
            return
        name = name_of(dv)
        pvc = source.get("pvc")
        if pvc is not None and self._find_pvc(pvc.get("namespace"), str(pvc.get("name") or "")) is None:
            message = (
                f"Source PVC {pvc.get('name')} not available: "
                f"Target PVC {name} will remain unpopulated until source is created"
            )
            self._events.event(vm, "Warning", SOURCE_PVC_NOT_AVAILABLE_REASON, message)
        try:
            refusal = self._authorizer.refusal(dv, _namespace(vm) or "", _service_account(vm))
        except CloneAuthError as err:
            refusal = str(err)
        if refusal is not None:
            self._events.event(
                vm,
                "Warning",
                UNAUTHORIZED_DATA_VOLUME_CREATE_REASON,
                f"Not authorized to create DataVolume {name}: {refusal}",
            )
            raise DataVolumeSyncError(f"not authorized to create DataVolume: {refusal}")


def _namespace(vm: VirtualMachine) -> str | None:
    return vm.metadata.namespace if vm.metadata is not None else None


def _template_volumes(vm: VirtualMachine) -> list[Volume]:
    spec = vm.spec.template.spec
    return list((spec.volumes if spec is not None else None) or ())


def _template_names(vm: VirtualMachine) -> list[str]:
    return [t.metadata.name for t in vm.spec.data_volume_templates or () if t.metadata and t.metadata.name]


def _service_account(vm: VirtualMachine) -> str:
    """The service account the VM runs as: its last serviceAccount volume's, else ``default``."""
    name = _DEFAULT_SERVICE_ACCOUNT
    for volume in _template_volumes(vm):
        if volume.service_account is not None:
            name = volume.service_account.service_account_name or ""
    return name
