"""The VirtualMachineExport controller (KubeVirt v1.6's ``VMExportController.updateVMExport``).

A pass over one export: make its Service; give it a first status (``Pending``, its TTL); find the claims
of its source (:mod:`.pvc_source`, :mod:`.vm_source`, :mod:`.snapshot_source`); once they can be served,
make the token Secret (unless ``spec.tokenSecretRef`` names one) and the exporter pod, whose certificate
Secret it signs with the export CA while the pod is pending; then report the status and links.

The exporter pod is deleted (and made again on the next pass) when its source becomes unavailable
(``ExportPaused``), when it ended (``ExporterPodFailedOrCompleted``) and when the certificate parameters
changed (``CertificateParametersChanged``). An export past its TTL is deleted.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from kubevirt.client import (
    CONFIG_MAPS,
    PODS,
    AlreadyExistsError,
    EventSink,
    KubeApi,
    NotFoundError,
)
from kubevirt.client.resources import SECRETS, SERVICES, VIRTUAL_MACHINE_EXPORTS
from kubevirt.controller import RequeueAfter, Store, key_for, key_of
from kubevirt.export.token import new_token
from kubevirt.instancetype.expand import ExpandError, expand_vm
from kubevirt.log import get_logger
from kubevirt.virt_config import ClusterConfig
from kubevirt.virt_controller.watch.common import Clock, Enqueue, utc_now
from kubevirt.virt_controller.watch.instancetype import InstancetypeSync
from kubevirt_api.core.v1 import VirtualMachine, VirtualMachineInstance
from kubevirt_api.core.v1.constants import API_VERSION
from kubevirt_api.export.v1beta1.types import PHASE_SKIPPED
from kubevirt_api.view import JSON

from . import manifests
from .certs import ExportCA, cert_params, certificate_secret
from .conditions import (
    READY,
    VM_NO_VOLUMES,
    condition,
    expiration_time,
    initial_status,
    update_condition,
)
from .data_manifest import data_manifest_config_map
from .links import (
    ExternalLinks,
    VolumeName,
    external_path,
    go_path_join,
    internal_ca,
    internal_host,
    pvc_volume_name,
)
from .names import (
    ANN_CERT_PARAMS,
    EXPORT_API_VERSION,
    EXPORT_INDEXERS,
    EXPORT_KIND,
    PVC_INDEX,
    VM_INDEX,
    VMSNAPSHOT_INDEX,
    default_token_secret_name,
    is_pvc_source,
    is_vm_source,
    is_vmsnapshot_source,
    owner_export_key,
    pod_name,
)
from .pvc_source import pvc_conditions, pvc_source_volumes, source_name
from .snapshot_source import SnapshotSource, VolumeSnapshots, snapshot_volume_name
from .status import LinkTargets, common_status
from .vm_source import claim_of_volume, vm_source_volumes
from .volumes import DataVolumeLookup, SourceError, SourceVolumes, is_kubevirt_content

# Events (KubeVirt's reasons).
EXPORTER_POD_FAILED_OR_COMPLETED: Final = "ExporterPodFailedOrCompleted"
EXPORTER_POD_CREATED: Final = "ExporterPodCreated"
EXPORT_PAUSED: Final = "ExportPaused"
SECRET_CREATED: Final = "SecretCreated"
SERVICE_CREATED: Final = "ServiceCreated"
CERT_PARAMS_CHANGED: Final = "CertificateParametersChanged"
DATA_MANIFEST_CREATED: Final = "DataManifestCreated"
# A source that cannot be served yet is looked at again after this long.
REQUEUE_SECONDS: Final = 3.0

RenderPod = Callable[[Mapping[str, Any]], JSON]
ExpandVM = Callable[[VirtualMachine], VirtualMachine]


@dataclass(frozen=True, kw_only=True)
class ExportStores:
    """The caches the controller reads. ``pods`` holds every pod (a claim is in use by any pod);
    ``config_maps``, ``ingresses``, ``secrets`` and ``kubevirts`` hold KubeVirt's namespace's."""

    exports: Store[JSON]
    pvcs: Store[JSON]
    pods: Store[JSON]
    services: Store[JSON]
    vms: Store[VirtualMachine]
    vmis: Store[VirtualMachineInstance]
    snapshots: Store[JSON]
    contents: Store[JSON]
    volume_snapshots: VolumeSnapshots
    config_maps: Store[JSON]
    ingresses: Store[JSON]
    secrets: Store[JSON]
    kubevirts: Store[JSON]


@dataclass(frozen=True)
class _Source:
    """How one kind of source is read and reported."""

    volumes: Callable[[JSON], SourceVolumes]
    report: Callable[[JSON, JSON, SourceVolumes, datetime], float | None]
    volume_name: VolumeName


class _ExportExpired(Exception):  # noqa: N818 (a signal that ends the pass, not an error)
    """The export was past its TTL and is deleted: the pass ends."""


def _event_object(export: Mapping[str, Any]) -> JSON:
    """The export with its kind and apiVersion (objects read from a list may lack them)."""
    return {"kind": EXPORT_KIND, "apiVersion": EXPORT_API_VERSION, **export}


def _phase(pod: Mapping[str, Any]) -> str:
    return str((pod.get("status") or {}).get("phase") or "")


class ExportController:
    def __init__(
        self,
        *,
        api: KubeApi,
        events: EventSink,
        stores: ExportStores,
        kubevirt_namespace: str,
        render_pod: RenderPod,
        expand_vm: ExpandVM,
        ca: ExportCA,
        data_volumes: DataVolumeLookup,
        enqueue: Enqueue,
        clock: Clock = utc_now,
    ) -> None:
        self._api = api
        self._events = events
        self._stores = stores
        stores.exports.add_indexers(EXPORT_INDEXERS)
        self._namespace = kubevirt_namespace
        self._render_pod = render_pod
        self._expand_vm = expand_vm
        self._ca = ca
        self._data_volumes = data_volumes
        self._enqueue = enqueue
        self._clock = clock
        self._external = ExternalLinks(stores.ingresses, stores.secrets, kubevirt_namespace)
        self._snapshot_source = SnapshotSource(
            api=api,
            snapshots=stores.snapshots,
            contents=stores.contents,
            pvcs=stores.pvcs,
            volume_snapshots=stores.volume_snapshots,
        )
        self._log = get_logger(controller="export")

    # The pass.

    def reconcile(self, key: str) -> None:
        cached = self._stores.exports.get_by_key(key)
        if cached is None or cached["metadata"].get("deletionTimestamp"):
            return
        source = self._source_of(cached)
        if source is None:
            self._log.warning("export of an unknown source kind: nothing to do", export=key)
            return
        export = copy.deepcopy(cached)
        now = self._clock()
        service = self._service(export)
        if export.get("status") is None:
            export["status"] = initial_status(export, now)
        sources = source.volumes(export)
        self._token(export, sources)
        try:
            pod = self._exporter_pod(export, service, sources, now)
        except _ExportExpired:
            return
        status = common_status(
            export, pod, service, sources, self._link_targets(export, now), source.volume_name, now
        )
        requeue = source.report(export, status, sources, now)
        if status != cached.get("status"):
            self._api.update_status(
                VIRTUAL_MACHINE_EXPORTS, export["metadata"].get("namespace"), {**cached, "status": status}
            )
        requeue = _sooner(requeue, self._until_expiry(export, pod, sources, now))
        if requeue is not None:
            raise RequeueAfter(requeue)

    def _source_of(self, export: JSON) -> _Source | None:
        if is_pvc_source(export):
            return _Source(self._pvc_volumes, self._report_pvc, pvc_volume_name)
        if is_vmsnapshot_source(export):
            return _Source(self._snapshot_source.volumes, self._report_snapshot, snapshot_volume_name)
        if is_vm_source(export):
            return _Source(self._vm_volumes, self._report_vm, pvc_volume_name)
        return None

    def _until_expiry(
        self, export: JSON, pod: JSON | None, sources: SourceVolumes, now: datetime
    ) -> float | None:
        """A served export is looked at again when its TTL runs out (then it is deleted)."""
        if pod is None or not sources.available:
            return None
        return max((expiration_time(export) - now).total_seconds(), 0.0)

    # Sources.

    def _pvc_volumes(self, export: JSON) -> SourceVolumes:
        return pvc_source_volumes(export, self._stores.pvcs, self._stores.pods, self._data_volumes)

    def _vm_volumes(self, export: JSON) -> SourceVolumes:
        s = self._stores
        return vm_source_volumes(export, s.vms, s.vmis, s.pvcs, self._data_volumes)

    def _report_pvc(self, export: JSON, status: JSON, sources: SourceVolumes, now: datetime) -> float | None:
        pvc_conditions(status, sources, now)
        return REQUEUE_SECONDS if not sources.available and sources.volumes else None

    def _report_vm(self, export: JSON, status: JSON, sources: SourceVolumes, now: datetime) -> float | None:
        status["virtualMachineName"] = source_name(export)
        if not sources.volumes:
            new = condition(READY, False, VM_NO_VOLUMES, sources.message, now)
            status["conditions"] = update_condition(status.get("conditions"), new)
            status["phase"] = PHASE_SKIPPED
        return REQUEUE_SECONDS if not sources.populated else None

    def _report_snapshot(
        self, export: JSON, status: JSON, sources: SourceVolumes, now: datetime
    ) -> float | None:
        status["virtualMachineName"] = self._snapshot_source.vm_name(export)
        self._snapshot_source.conditions(export, status, sources, now)
        return None

    # The service and the token.

    def _service(self, export: JSON) -> JSON:
        wanted = manifests.service(export)
        meta = wanted["metadata"]
        found = self._stores.services.get_by_key(key_for(meta["namespace"], meta["name"]))
        if found is not None:
            return found
        try:
            created = self._api.create(SERVICES, meta["namespace"], wanted)
        except AlreadyExistsError:
            return self._api.get(SERVICES, meta["namespace"], meta["name"])
        self._event(export, "Normal", SERVICE_CREATED, f"Created service {meta['namespace']}/{meta['name']}")
        return created

    def _token(self, export: JSON, sources: SourceVolumes) -> None:
        """The Secret with the token clients present: the user's (``spec.tokenSecretRef``), or one made
        for the export once it can be served."""
        status = export["status"]
        given = (export.get("spec") or {}).get("tokenSecretRef")
        if given:
            status["tokenSecretRef"] = given
            return
        if not sources.available or not sources.volumes:
            return
        if not status.get("tokenSecretRef"):
            status["tokenSecretRef"] = default_token_secret_name(export["metadata"]["name"])
        namespace = export["metadata"].get("namespace")
        secret = manifests.token_secret(export, status["tokenSecretRef"], new_token())
        try:
            self._api.create(SECRETS, namespace, secret)
        except AlreadyExistsError:
            return
        self._event(
            export, "Normal", SECRET_CREATED, f"Created default secret {namespace}/{status['tokenSecretRef']}"
        )

    # The exporter pod.

    def _exporter_pod(
        self, export: JSON, service: JSON, sources: SourceVolumes, now: datetime
    ) -> JSON | None:
        namespace = export["metadata"].get("namespace")
        pod = self._stores.pods.get_by_key(key_for(namespace, pod_name(export["metadata"]["name"])))
        if pod is None and sources.available and sources.volumes:
            pod = self._create_pod(export, service, sources, now)
        if pod is None:
            return None
        if _phase(pod) in ("", "Pending"):
            self._certificate_secret(export, pod, now)
        if not sources.available:
            self._delete_pod(export, pod, EXPORT_PAUSED, sources.message)
            return None
        return self._check_pod(export, pod, now)

    def _check_pod(self, export: JSON, pod: JSON, now: datetime) -> JSON | None:
        """Ends what must end: the export past its TTL, a pod that stopped, a pod whose certificate was
        made under other parameters. The pod is still reported as it was last seen."""
        if pod["metadata"].get("deletionTimestamp"):
            return pod
        if now >= expiration_time(export):
            with contextlib.suppress(NotFoundError):
                self._api.delete(
                    VIRTUAL_MACHINE_EXPORTS, export["metadata"].get("namespace"), export["metadata"]["name"]
                )
            self._log.info("export expired, deleted", export=key_of(export))
            raise _ExportExpired
        if _phase(pod) in ("Succeeded", "Failed"):
            meta = pod["metadata"]
            message = f"Exporter pod {meta.get('namespace')}/{meta['name']} is in phase {_phase(pod)}"
            self._delete_pod(export, pod, EXPORTER_POD_FAILED_OR_COMPLETED, message)
            return pod
        params = cert_params(self._kubevirt()).serialize()
        if (pod["metadata"].get("annotations") or {}).get(ANN_CERT_PARAMS) != params:
            self._delete_pod(export, pod, CERT_PARAMS_CHANGED, "Exporter TLS certificate parameters updated")
        return pod

    def _delete_pod(self, export: JSON, pod: JSON, reason: str, message: str) -> None:
        self._event(export, "Warning", reason, message)
        with contextlib.suppress(NotFoundError):
            self._api.delete(PODS, pod["metadata"].get("namespace"), pod["metadata"]["name"])

    def _create_pod(self, export: JSON, service: JSON, sources: SourceVolumes, now: datetime) -> JSON:
        params = cert_params(self._kubevirt())
        deadline = min(now + params.deadline, expiration_time(export))
        pod = manifests.exporter_pod(
            self._render_pod(export),
            export,
            sources.volumes,
            params=params,
            raw=lambda pvc: is_kubevirt_content(pvc, self._data_volumes),
            deadline=deadline,
        )
        vm = self._vm_of(export)
        if vm is not None:
            config_map = self._data_manifest(export, vm, service, now)
            manifests.add_manifest_volume(pod, config_map)
        meta = pod["metadata"]
        created = self._api.create(PODS, meta["namespace"], pod)
        self._event(
            export, "Normal", EXPORTER_POD_CREATED, f"Created exporter pod {meta['namespace']}/{meta['name']}"
        )
        return created

    def _certificate_secret(self, export: JSON, pod: JSON, now: datetime) -> None:
        secret = certificate_secret(export, pod, self._ca.current(), now)
        try:
            self._api.create(SECRETS, secret["metadata"]["namespace"], secret)
        except AlreadyExistsError:
            return
        self._event(export, "Normal", SECRET_CREATED, "Created exporter pod secret")

    def _kubevirt(self) -> JSON | None:
        found = self._stores.kubevirts.list()
        return found[0] if found else None

    # The VM's manifests.

    def _vm_of(self, export: JSON) -> JSON | None:
        """The exported VM (a snapshot's VM as it is now), expanded; None for a claim's export."""
        if is_vmsnapshot_source(export):
            name = self._snapshot_source.vm_name(export)
        elif is_vm_source(export):
            name = source_name(export)
        else:
            return None
        vm = self._stores.vms.get_by_key(key_for(export["metadata"].get("namespace"), name)) if name else None
        return self._expand_vm(vm).to_dict() if vm is not None else None

    def _data_manifest(self, export: JSON, vm: JSON, service: JSON, now: datetime) -> str:
        targets = self._link_targets(export, now)
        config_map = data_manifest_config_map(
            export,
            vm,
            self._stores.pvcs,
            internal_host=internal_host(service),
            internal_ca=targets.internal_ca,
            external_host=_external_base(targets),
            external_ca=targets.external_cert,
            owner=manifests.export_owner(export),
        )
        meta = config_map["metadata"]
        try:
            self._api.create(CONFIG_MAPS, meta["namespace"], config_map)
        except AlreadyExistsError:
            return str(meta["name"])
        self._event(
            export,
            "Normal",
            DATA_MANIFEST_CREATED,
            f"Created exporter data manifest {meta['namespace']}/{meta['name']}",
        )
        return str(meta["name"])

    def _link_targets(self, export: JSON, now: datetime) -> LinkTargets:
        host, cert = self._external.host_and_cert(now)
        return LinkTargets(
            internal_ca=internal_ca(self._stores.config_maps, self._namespace),
            external_host=host,
            external_cert=cert,
            external_path=external_path(export),
        )

    def _event(self, export: JSON, event_type: str, reason: str, message: str) -> None:
        self._events.event(_event_object(export), event_type, reason, message)

    # Informer events.

    def on_export_add(self, export: JSON) -> None:
        self._enqueue(key_of(export))

    def on_export_update(self, _old: JSON, new: JSON) -> None:
        self._enqueue(key_of(new))

    def on_export_delete(self, _export: JSON) -> None:
        """What an export made is owned by it and goes with it."""

    def on_pod_add(self, pod: JSON) -> None:
        self._enqueue_owner(pod)

    def on_pod_update(self, _old: JSON, new: JSON) -> None:
        self._enqueue_owner(new)

    def on_pod_delete(self, pod: JSON) -> None:
        self._enqueue_owner(pod)

    on_service_add = on_pod_add
    on_service_update = on_pod_update
    on_service_delete = on_pod_delete

    def _enqueue_owner(self, obj: JSON) -> None:
        key = owner_export_key(obj)
        if key is not None and self._stores.exports.get_by_key(key) is not None:
            self._enqueue(key)

    def on_pvc_add(self, pvc: JSON) -> None:
        self._enqueue_by(PVC_INDEX, key_of(pvc))

    def on_pvc_update(self, _old: JSON, new: JSON) -> None:
        self._enqueue_by(PVC_INDEX, key_of(new))

    def on_pvc_delete(self, pvc: JSON) -> None:
        self._enqueue_by(PVC_INDEX, key_of(pvc))

    def on_vmsnapshot_add(self, snapshot: JSON) -> None:
        self._enqueue_by(VMSNAPSHOT_INDEX, key_of(snapshot))

    def on_vmsnapshot_update(self, _old: JSON, new: JSON) -> None:
        self._enqueue_by(VMSNAPSHOT_INDEX, key_of(new))

    def on_vmsnapshot_delete(self, snapshot: JSON) -> None:
        self._enqueue_by(VMSNAPSHOT_INDEX, key_of(snapshot))

    def on_vm_add(self, vm: VirtualMachine) -> None:
        self._enqueue_by(VM_INDEX, key_of(vm))

    def on_vm_update(self, _old: VirtualMachine, new: VirtualMachine) -> None:
        self._enqueue_by(VM_INDEX, key_of(new))

    def on_vm_delete(self, vm: VirtualMachine) -> None:
        self._enqueue_by(VM_INDEX, key_of(vm))

    def on_vmi_add(self, vmi: VirtualMachineInstance) -> None:
        self._enqueue_for_vmi(vmi)

    def on_vmi_update(self, _old: VirtualMachineInstance, new: VirtualMachineInstance) -> None:
        self._enqueue_for_vmi(new)

    def on_vmi_delete(self, vmi: VirtualMachineInstance) -> None:
        self._enqueue_for_vmi(vmi)

    def _enqueue_for_vmi(self, vmi: VirtualMachineInstance) -> None:
        """A VM's VMI concerns the exports of the VM; a VMI of its own, those of its claims."""
        namespace = vmi.metadata.namespace if vmi.metadata else None
        owner = next(
            (
                ref
                for ref in (vmi.metadata.owner_references if vmi.metadata else None) or ()
                if ref.controller
            ),
            None,
        )
        if owner is not None and owner.kind == "VirtualMachine" and owner.api_version == API_VERSION:
            vm_key = key_for(namespace, owner.name)
            if self._stores.vms.get_by_key(vm_key) is not None:
                self._enqueue_by(VM_INDEX, vm_key)
                return
        for volume in vmi.to_dict().get("spec", {}).get("volumes") or ():
            claim = claim_of_volume(volume)
            if claim and self._stores.pvcs.get_by_key(key_for(namespace, claim)) is not None:
                self._enqueue_by(PVC_INDEX, key_for(namespace, claim))

    def on_kubevirt_add(self, _kubevirt: JSON) -> None:
        """Exports made before the CR was seen wait for their next pass."""

    def on_kubevirt_update(self, old: JSON, new: JSON) -> None:
        """New certificate parameters recreate every exporter pod."""
        if (old.get("spec") or {}).get("certificateRotateStrategy") != (new.get("spec") or {}).get(
            "certificateRotateStrategy"
        ):
            for key in self._stores.exports.list_keys():
                self._enqueue(key)

    def on_kubevirt_delete(self, _kubevirt: JSON) -> None:
        pass

    def _enqueue_by(self, index: str, source_key: str) -> None:
        for export in self._stores.exports.by_index(index, source_key):
            self._enqueue(key_of(export))


def _external_base(targets: LinkTargets) -> str:
    return go_path_join(targets.external_host, targets.external_path) if targets.external_host else ""


def _sooner(first: float | None, second: float | None) -> float | None:
    candidates = [value for value in (first, second) if value is not None]
    return min(candidates) if candidates else None


def vm_expander(sync: InstancetypeSync, config: Callable[[], ClusterConfig]) -> ExpandVM:
    """The VM with what its instance type and preference select written into it (KubeVirt expands the
    exported VM so that it stands on its own in another cluster)."""

    def expand(vm: VirtualMachine) -> VirtualMachine:
        selection = sync.select(vm)
        try:
            return expand_vm(
                vm,
                selection.instancetype.spec if selection.instancetype is not None else None,
                selection.preference.spec if selection.preference is not None else None,
                config(),
            )
        except ExpandError as err:
            raise SourceError(f"cannot expand the VM: {err}") from None

    return expand
