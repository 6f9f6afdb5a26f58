"""The KubeVirt CR reconciler (KubeVirt's ``virt-operator/kubevirt.go``): install, repair, report and
uninstall, one CR at a time, reading only from the informer caches.

A sync records the target version, issues or rotates the certificates, applies every object of the
install strategy (restoring any that was deleted or edited), removes managed objects the strategy no
longer has, installs the common instance types and preferences once the components are rolled out, and
writes the CR status as KubeVirt does. Where Prometheus runs it installs KubeVirt's monitoring objects
(see :mod:`kubevirt.virt_operator.monitoring_install`). Under the DataImporter gate it also installs the
project's DataVolume importer (see :mod:`kubevirt.virt_operator.data_importer`). Deleting the CR removes
everything the operator made but the importer's CRDs and namespace (which hold users' DataVolumes), unless
the uninstall strategy says to wait for the workloads to go first.
"""

from __future__ import annotations

import copy
import datetime
import os
import platform
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from kubevirt.client import (
    JSON,
    KUBEVIRTS,
    VIRTUAL_MACHINE_INSTANCE_REPLICA_SETS,
    VIRTUAL_MACHINE_INSTANCES,
    VIRTUAL_MACHINES,
    ApiError,
    KubeApi,
    NotFoundError,
    Resource,
)
from kubevirt.client.resources import CONFIG_MAPS, SECRETS
from kubevirt.controller import RequeueAfter, Store, key_for
from kubevirt.log import get_logger
from kubevirt.version import get_version
from kubevirt.virt_operator import conditions
from kubevirt.virt_operator.apply import Applier, CacheLookup, contains
from kubevirt.virt_operator.cdi_certificates import reconcile_cdi_certificates
from kubevirt.virt_operator.certificates import CertificateError, reconcile_certificates, rotation_policy
from kubevirt.virt_operator.data_importer import CrdLookup, DataImporter, no_crds
from kubevirt.virt_operator.instancetypes import CommonInstancetypes
from kubevirt.virt_operator.monitoring_install import (
    LookupPendingError,
    MonitoringResolver,
    ObjectLookup,
    nothing_named,
    withheld,
)
from kubevirt.virt_operator.readiness import workloads_ready
from kubevirt.virt_operator.resource.cdi import outlives_the_controller, outlives_the_install
from kubevirt.virt_operator.resource.config import InstallConfig, InvalidInstallConfigError, install_config
from kubevirt.virt_operator.resource.metadata import stamp
from kubevirt.virt_operator.resource.strategy import install_strategy
from kubevirt_api.cdi.constants import CDI_NAMESPACE
from kubevirt_api.core.v1.kubevirt import KubeVirt, KubeVirtPhase, KubeVirtUninstallStrategy

_log = get_logger()
UNINSTALL_BLOCKED = (
    "Rejecting the uninstall request, since there are still {} present. Either delete all KubeVirt "
    "related workloads or change the uninstall strategy before uninstalling KubeVirt."
)
# What BlockUninstallIfWorkloadsExist waits for, with KubeVirt's words for them.
_WORKLOADS: tuple[tuple[Resource, str], ...] = (
    (VIRTUAL_MACHINE_INSTANCES, "Virtual Machine Instances"),
    (VIRTUAL_MACHINES, "Virtual Machines"),
    (VIRTUAL_MACHINE_INSTANCE_REPLICA_SETS, "Virtual Machine Instance Replica Sets"),
)
WORKLOAD_RECHECK_SECONDS = 5.0
BUNDLE_CACHE_RECHECK_SECONDS = 1.0
LOOKUP_RECHECK_SECONDS = 1.0
MAX_ROTATION_WAIT_SECONDS = 3600.0
_ARCHITECTURES = {"x86_64": "amd64", "aarch64": "arm64", "ppc64le": "ppc64le", "s390x": "s390x"}


def default_architecture() -> str:
    machine = platform.machine()
    return _ARCHITECTURES.get(machine, machine)


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


@dataclass(frozen=True)
class OperatorSettings:
    namespace: str
    operator_image: str


class KubeVirtReconciler:
    def __init__(
        self,
        api: KubeApi,
        settings: OperatorSettings,
        kubevirts: Store[KubeVirt],
        caches: CacheLookup,
        clock: Callable[[], datetime.datetime] = _now,
        synced: Callable[[Resource], bool] = lambda _resource: True,
        crd_named: CrdLookup = no_crds,
        named: ObjectLookup = nothing_named,
        environ: Mapping[str, str] = os.environ,
    ) -> None:
        self._api = api
        self._settings = settings
        self._kubevirts = kubevirts
        self._caches = caches
        self._applier = Applier(api, caches)
        self._common_instancetypes = CommonInstancetypes(self._applier, synced)
        self._data_importer = DataImporter(api, caches, synced, crd_named)
        self._monitoring = MonitoringResolver(crd_named, named, environ)
        self._clock = clock

    # The contract.

    def reconcile(self, key: str) -> None:
        kv = self._kubevirts.get_by_key(key)
        if kv is None or kv.metadata is None:
            return
        raw = kv.model_dump(by_alias=True, exclude_none=True, mode="json")
        before: JSON = copy.deepcopy(raw.get("status") or {})
        status: JSON = copy.deepcopy(before)
        requeue: float | None = None
        version = kv.metadata.resource_version
        try:
            if not self._is_the_active_install(kv):
                conditions.failed_exists(status)
            elif kv.metadata.deletion_timestamp is not None:
                requeue = self._sync_deletion(kv, status)
            else:
                requeue = self._sync_installation(kv, status)
        finally:
            # A failed sync still reports why (the controller retries it with backoff).
            version = self._write_status(kv, before, status)
        if status.get("phase") == KubeVirtPhase.DELETED:
            self._remove_finalizer(kv, version)
        if requeue is not None:
            raise RequeueAfter(requeue)

    # Which CR is in charge.

    def active_install(self) -> KubeVirt | None:
        """The CR in charge: of those in the operator's namespace, one that already holds the finalizer,
        or else the oldest (None when there is none, or the caches are not started)."""
        candidates = [
            other
            for other in self._kubevirts.list()
            if other.metadata is not None and other.metadata.namespace == self._settings.namespace
        ]

        def rank(other: KubeVirt) -> tuple[bool, str, str]:
            assert other.metadata is not None
            holds = conditions.FINALIZER in (other.metadata.finalizers or [])
            created = str(other.metadata.creation_timestamp or "")
            return (not holds, created, other.metadata.name or "")

        return min(candidates, key=rank) if candidates else None

    def _is_the_active_install(self, kv: KubeVirt) -> bool:
        """Only a CR in the operator's namespace installs, and only the one in charge."""
        assert kv.metadata is not None
        if kv.metadata.namespace != self._settings.namespace:
            return False
        active = self.active_install()
        return active is not None and active.metadata is not None and active.metadata.name == kv.metadata.name

    # Installing.

    def _sync_installation(self, kv: KubeVirt, status: JSON) -> float | None:
        assert kv.metadata is not None
        namespace = self._settings.namespace
        try:
            config = install_config(kv, namespace=namespace, operator_image=self._settings.operator_image)
            config = self._data_importer.resolve(config)
            config = self._monitoring.resolve(config)
            policy = rotation_policy(
                kv.spec.certificate_rotate_strategy.self_signed
                if kv.spec.certificate_rotate_strategy
                else None
            )
        except (InvalidInstallConfigError, CertificateError) as err:
            # Nothing is touched: the objects of the last valid configuration stay as they are.
            _log.warning("invalid KubeVirt configuration, keeping the installed one", reason=str(err))
            conditions.failed_error(status, str(err))
            return None
        except LookupPendingError:
            # A CR's own monitor namespace or account is looked up in a cache just made: soon known.
            return LOOKUP_RECHECK_SECONDS
        self._record_target(status, config)
        if not status.get("phase"):
            status["phase"] = KubeVirtPhase.DEPLOYING
        if conditions.is_updating(status):
            conditions.updating(status)
        else:
            conditions.deploying(status)
        self._add_finalizer(kv)
        now = self._clock()
        try:
            # Everything is computed before anything is written, so a configuration that cannot be
            # applied (a bad patch) leaves the installed objects as they are.
            issued = reconcile_certificates(
                namespace,
                policy,
                self._by_name(SECRETS, namespace),
                self._by_name(CONFIG_MAPS, namespace),
                now,
            )
            issued_objects = [*issued.secrets, *issued.config_maps]
            next_rotation = issued.next_rotation
            cdi_api_ca_bundle: bytes | None = None
            if config.data_importer:
                # The upload path's signers and certificates, in CDI's namespace and on CDI's schedule.
                cdi_issued = reconcile_cdi_certificates(
                    self._by_name(SECRETS, CDI_NAMESPACE), self._by_name(CONFIG_MAPS, CDI_NAMESPACE), now
                )
                issued_objects += [*cdi_issued.secrets, *cdi_issued.config_maps]
                next_rotation = min(next_rotation, cdi_issued.next_rotation)
                cdi_api_ca_bundle = cdi_issued.api_ca_bundle
            desired = install_strategy(config, issued.ca_bundle, cdi_api_ca_bundle)
        except InvalidInstallConfigError as err:
            _log.warning("invalid KubeVirt configuration, keeping the installed one", reason=str(err))
            conditions.failed_error(status, str(err))
            return None
        certificates = [stamp(obj, config) for obj in issued_objects]
        try:
            # Namespaces first: CDI's certificates live in a namespace the install set makes.
            self._applier.apply_all([obj for obj in desired if obj.get("kind") == "Namespace"])
            self._applier.apply_all(certificates)
            self._applier.apply_all(desired)
            # The DataVolume importer's API outlives its gate: its CRDs hold the users' DataVolumes.
            self._applier.delete_stale(
                [*certificates, *desired],
                keep=lambda obj: outlives_the_controller(obj) or withheld(config, obj),
            )
            cdi_pending = config.data_importer and not self._data_importer.ensure_cdi_object()
        except ApiError as err:
            conditions.failed_error(status, str(err))
            raise
        ready = self._rolled_out(desired) and not cdi_pending
        bundle_pending = False
        if ready:
            # As KubeVirt, the bundle goes last: its objects pass virt-api's webhooks.
            raw = kv.model_dump(by_alias=True, exclude_none=True, mode="json")
            try:
                bundle_pending = not self._common_instancetypes.sync(raw, config)
            except ApiError as err:
                conditions.failed_error(status, str(err))
                raise
            ready = not bundle_pending
        # A fresh install is synced once everything exists; an update once the components rolled over
        # to it. From then on the target is the observed install.
        if ready or not conditions.is_updating(status):
            for field in ("KubeVirtVersion", "KubeVirtRegistry", "DeploymentConfig", "DeploymentID"):
                status[f"observed{field}"] = status[f"target{field}"]
            conditions.created(status)
        if ready:
            status["phase"] = KubeVirtPhase.DEPLOYED
            conditions.available(status)
            status["observedGeneration"] = kv.metadata.generation
        if bundle_pending or cdi_pending:
            return BUNDLE_CACHE_RECHECK_SECONDS
        wait = (next_rotation - now).total_seconds()
        return min(max(wait, 1.0), MAX_ROTATION_WAIT_SECONDS)

    def _rolled_out(self, desired: list[JSON]) -> bool:
        """Every Deployment and DaemonSet is as the strategy says (a cache still showing the version
        before a patch is not) and reports ready."""
        current: list[JSON | None] = []
        for obj in desired:
            if obj["kind"] in ("Deployment", "DaemonSet"):
                cached = self._applier.cached(obj)
                current.append(cached if cached is not None and contains(cached, obj) else None)
        return workloads_ready(current)

    def _record_target(self, status: JSON, config: InstallConfig) -> None:
        status["operatorVersion"] = get_version()
        status["defaultArchitecture"] = default_architecture()
        status["targetKubeVirtVersion"] = config.version
        status["targetKubeVirtRegistry"] = config.registry
        status["targetDeploymentConfig"] = config.deployment_config()
        status["targetDeploymentID"] = config.deployment_id

    def _by_name(self, resource: Resource, namespace: str) -> dict[str, JSON]:
        """The cached objects of one namespace by name (the caches may span the importer's too)."""
        return {
            obj["metadata"]["name"]: obj
            for obj in self._caches(resource).list()
            if obj["metadata"].get("namespace") == namespace
        }

    # Uninstalling.

    def _sync_deletion(self, kv: KubeVirt, status: JSON) -> float | None:
        status["phase"] = KubeVirtPhase.DELETING
        conditions.deleting(status)
        blocked = self._uninstall_blocked(kv, status)
        if blocked is not None:
            conditions.deletion_failed(status, blocked)
            return WORKLOAD_RECHECK_SECONDS
        try:
            # The DataVolume importer's CRDs stay (they hold users' DataVolumes, and the claims those own):
            # removing them is left to a cluster admin.
            remaining = self._applier.delete_all(keep=outlives_the_install)
        except ApiError as err:
            conditions.deletion_failed(status, str(err))
            raise
        if remaining:
            return None  # the caches report each removal; the last one brings the CR back here
        status["phase"] = KubeVirtPhase.DELETED
        return None

    def _uninstall_blocked(self, kv: KubeVirt, status: JSON) -> str | None:
        """KubeVirt's reason for refusing the uninstall, while workloads exist and the CR says so."""
        if kv.spec.uninstall_strategy != KubeVirtUninstallStrategy.BLOCK_UNINSTALL_IF_WORKLOADS_EXIST:
            return None
        if not status.get("observedDeploymentID"):
            return None  # nothing was installed that workloads could depend on
        for resource, words in _WORKLOADS:
            try:
                listed, _ = self._api.list(resource)
            except NotFoundError:
                continue  # the CRD is gone
            if listed:
                return UNINSTALL_BLOCKED.format(words)
        return None

    # Writing the CR.

    def _add_finalizer(self, kv: KubeVirt) -> None:
        assert kv.metadata is not None
        finalizers = list(kv.metadata.finalizers or [])
        if conditions.FINALIZER in finalizers:
            return
        self._patch_finalizers(kv, [*finalizers, conditions.FINALIZER], kv.metadata.resource_version)

    def _remove_finalizer(self, kv: KubeVirt, version: str | None) -> None:
        assert kv.metadata is not None
        finalizers = list(kv.metadata.finalizers or [])
        if conditions.FINALIZER in finalizers:
            self._patch_finalizers(kv, [f for f in finalizers if f != conditions.FINALIZER], version)

    def _patch_finalizers(self, kv: KubeVirt, finalizers: list[str], version: str | None) -> None:
        assert kv.metadata is not None
        # The resourceVersion makes this a precondition: a stale cache fails with a conflict and retries.
        patch = {"metadata": {"finalizers": finalizers, "resourceVersion": version}}
        namespace, name = kv.metadata.namespace, kv.metadata.name or ""
        self._api.patch(KUBEVIRTS, namespace, name, patch, patch_type="merge")

    def _write_status(self, kv: KubeVirt, before: JSON, status: JSON) -> str | None:
        """Writes a changed status; returns the CR's resourceVersion after it."""
        assert kv.metadata is not None
        if status == before:
            return kv.metadata.resource_version
        conditions.stamp_times(before, status, self._clock().strftime("%Y-%m-%dT%H:%M:%SZ"))
        namespace, name = kv.metadata.namespace, kv.metadata.name or ""
        try:
            written = self._api.patch(
                KUBEVIRTS, namespace, name, {"status": status}, patch_type="merge", subresource="status"
            )
        except NotFoundError:
            return None  # deleted meanwhile
        _log.info(
            "KubeVirt status",
            key=key_for(namespace, name),
            phase=status.get("phase"),
            conditions={c["type"]: c["status"] for c in status.get("conditions") or []},
        )
        return str(written["metadata"]["resourceVersion"])
