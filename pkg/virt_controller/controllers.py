"""virt-controller's controllers wired to shared informers: which caches each reconciler reads, which
informer events enqueue which keys, and one work queue and worker pool per controller.

Nothing here talks to the API by itself: the informers start when :meth:`ControllerSet.start` is called,
which virt-controller does only while it holds the leader lease.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from prometheus_client.registry import Collector

from kubevirt.client import (
    NODES,
    PERSISTENT_VOLUME_CLAIMS,
    POD_DISRUPTION_BUDGETS,
    PODS,
    VIRTUAL_MACHINE_INSTANCE_MIGRATIONS,
    VIRTUAL_MACHINE_INSTANCE_REPLICA_SETS,
    VIRTUAL_MACHINE_INSTANCES,
    VIRTUAL_MACHINE_POOLS,
    VIRTUAL_MACHINES,
    EventSink,
    KubeApi,
    KubeClient,
)
from kubevirt.client.resources import (
    CONFIG_MAPS,
    CONTROLLER_REVISIONS,
    CUSTOM_RESOURCE_DEFINITIONS,
    INGRESSES,
    KUBEVIRTS,
    MIGRATION_POLICIES,
    SECRETS,
    SERVICES,
    STORAGE_CLASSES,
    VIRTUAL_MACHINE_CLONES,
    VIRTUAL_MACHINE_CLUSTER_INSTANCETYPES,
    VIRTUAL_MACHINE_CLUSTER_PREFERENCES,
    VIRTUAL_MACHINE_EXPORTS,
    VIRTUAL_MACHINE_INSTANCETYPES,
    VIRTUAL_MACHINE_PREFERENCES,
    VIRTUAL_MACHINE_RESTORES,
    VIRTUAL_MACHINE_SNAPSHOT_CONTENTS,
    VIRTUAL_MACHINE_SNAPSHOTS,
)
from kubevirt.controller import (
    Controller,
    ControllerExpectations,
    Informer,
    RateLimitingQueue,
    Reconciler,
    SharedInformerFactory,
    UIDTrackingControllerExpectations,
    key_for,
)
from kubevirt.controller.ratelimit import (
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    MaxOfRateLimiter,
    RateLimiter,
)
from kubevirt.export.paths import EXPORT_PREFIX
from kubevirt.monitoring.virt_controller.instancetypes import store_lookup
from kubevirt.monitoring.virt_controller.migration_transitions import MigrationPhaseTransitions
from kubevirt.monitoring.virt_controller.migrationstats import MigrationStatsCollector
from kubevirt.monitoring.virt_controller.perfscale import VMIPhaseTransitions
from kubevirt.monitoring.virt_controller.vmi_overhead import LauncherMemoryOverhead
from kubevirt.monitoring.virt_controller.vmistats import VMIStatsCollector
from kubevirt.monitoring.virt_controller.vmsnapshot import VMSnapshotSucceeded
from kubevirt.monitoring.virt_controller.vmstats import VMStatsCollector
from kubevirt.service.certs import EXPORT_CA_CONFIG_MAP
from kubevirt.virt_config import ClusterConfig
from kubevirt.virt_config.config import DEFAULT_INSTALL_NAMESPACE
from kubevirt.virt_config.follower import ConfigFollower
from kubevirt.virt_controller.services import TemplateParameters, render_launcher_pod
from kubevirt.virt_controller.services.exporter_pod import EXPORTER_APP, render_exporter_pod
from kubevirt.virt_controller.services.resources import memory_overhead
from kubevirt.virt_controller.watch.cdiinformers import CdiInformers
from kubevirt.virt_controller.watch.clone.clone import CloneController
from kubevirt.virt_controller.watch.disruptionbudget import DisruptionBudgetController
from kubevirt.virt_controller.watch.evacuation import EvacuationController
from kubevirt.virt_controller.watch.export.certs import FileExportCA
from kubevirt.virt_controller.watch.export.controller import ExportController, ExportStores, vm_expander
from kubevirt.virt_controller.watch.export.names import EXPORT_INDEXERS
from kubevirt.virt_controller.watch.export.volumes import ApiDataVolumes
from kubevirt.virt_controller.watch.instancetype import InstancetypeStores, InstancetypeSync
from kubevirt.virt_controller.watch.migration import MigrationController
from kubevirt.virt_controller.watch.node import NodeController
from kubevirt.virt_controller.watch.pool import PoolController
from kubevirt.virt_controller.watch.replicaset import ReplicaSetController
from kubevirt.virt_controller.watch.snapshot.content import ContentController
from kubevirt.virt_controller.watch.snapshot.crds import SnapshotCrdInformers
from kubevirt.virt_controller.watch.snapshot.freezer import Freezer
from kubevirt.virt_controller.watch.snapshot.restore import (
    RestoreController,
)
from kubevirt.virt_controller.watch.snapshot.snapshot import (
    SOURCE_INDEX,
    SnapshotController,
    SnapshotSources,
    source_index,
)
from kubevirt.virt_controller.watch.snapshot.vmstatus import VolumeSnapshotStatusController
from kubevirt.virt_controller.watch.vm import VMController
from kubevirt.virt_controller.watch.vmi import VMIController
from kubevirt.virt_controller.watch.volumerequests import VMIVolumes
from kubevirt.virt_controller.watch.workload_updater import (
    THROTTLE_SECONDS,
    PodEvictor,
    SubresourceEvictor,
    WorkloadUpdateController,
)
from kubevirt_api.core.v1 import (
    VirtualMachine,
    VirtualMachineInstance,
    VirtualMachineInstanceReplicaSet,
)
from kubevirt_api.core.v1.constants import (
    APP_LABEL,
    APP_LABEL_PREFIX,
    MANAGED_BY_LABEL_OPERATOR_OLD_VALUE,
    MANAGED_BY_LABEL_OPERATOR_VALUE,
)
from kubevirt_api.instancetype.v1beta1 import (
    VirtualMachineClusterInstancetype,
    VirtualMachineClusterPreference,
    VirtualMachineInstancetype,
    VirtualMachinePreference,
)
from kubevirt_api.pool.v1alpha1 import VirtualMachinePool
from kubevirt_api.view import JSON

# KubeVirt's pods carry this label (launcher pods and hotplug attachment pods among them); virt-controller
# watches only those pods, as KubeVirt's KubeVirtPod informer does.
KUBEVIRT_POD_SELECTOR = "kubevirt.io"
# KubeVirt adds up to this many seconds to each launcher's qemu timeout, so launchers started together
# do not all give up at once.
QEMU_TIMEOUT_JITTER_SECONDS = 120
# The Secrets of KubeVirt's namespace the export controller reads (an Ingress's TLS Secret): not the
# operator's own, as KubeVirt's UnmanagedSecrets informer selects them.
_OPERATOR_VALUES = f"{MANAGED_BY_LABEL_OPERATOR_VALUE},{MANAGED_BY_LABEL_OPERATOR_OLD_VALUE}"
UNMANAGED_SECRETS_SELECTOR = f"{APP_LABEL_PREFIX}/managed-by notin ({_OPERATOR_VALUES})"


@dataclass(frozen=True, kw_only=True)
class Threads:
    """Worker threads per controller (KubeVirt's defaults: VMI 10, all others 3)."""

    vm: int = 3
    vmi: int = 10
    replicaset: int = 3
    pool: int = 3
    node: int = 3
    migration: int = 3
    evacuation: int = 3
    disruption_budget: int = 3
    snapshot: int = 6
    restore: int = 3
    clone: int = 3
    export: int = 3
    # One: the queue holds the KubeVirt CR only.
    workload_update: int = 1


class _Handlers:
    """Adapts a controller's on_<kind>_add/update/delete methods to an informer's three callbacks."""

    @staticmethod
    def connect(informer: Informer[Any], target: Any, kind: str) -> None:
        informer.add_event_handler(
            getattr(target, f"on_{kind}_add"),
            getattr(target, f"on_{kind}_update"),
            getattr(target, f"on_{kind}_delete"),
        )


# KubeVirt's names for these controllers' work queues: its kubevirt_workqueue_* series carry them.
KUBEVIRT_QUEUE_NAMES = {
    "virtualmachine": "virt-controller-vm",
    "virtualmachineinstance": "virt-controller-vmi",
    "virtualmachinereplicaset": "virt-controller-replicaset",
    "virtualmachinepool": "virt-controller-pool",
    "node": "virt-controller-node",
    "migration": "virt-controller-migration",
    "evacuation": "virt-controller-evacuation",
    "workload-update": "virt-controller-workload-update",
    "disruption-budget": "virt-controller-disruption-budget",
    "vmsnapshot": "virt-controller-snapshot-vmsnapshot",
    "vmsnapshotcontent": "virt-controller-snapshot-vmsnapshotcontent",
    "vmsnapshotstatus": "virt-controller-snapshot-vmsnashotstatus",  # sic, as KubeVirt spells it
    "vmrestore": "virt-controller-restore-vmrestore",
    "vmclone": "virt-controller-vmclone",
    "vmexport": "virt-controller-export-vmexport",
}


class ControllerSet:
    """Every controller virt-controller runs, on one shared informer factory."""

    def __init__(
        self,
        *,
        api: KubeApi,
        events: EventSink,
        factory: SharedInformerFactory,
        config: ConfigFollower,
        template: TemplateParameters,
        threads: Threads = Threads(),
        rng: random.Random | None = None,
        vmi_volumes: VMIVolumes | None = None,
        freezer: Freezer | None = None,
        namespace: str = DEFAULT_INSTALL_NAMESPACE,
        evictor: PodEvictor | None = None,
    ) -> None:
        self._factory = factory
        self._namespace = namespace
        self._config = config
        self._template = template
        self._rng = rng or random.Random()
        self._memory_overhead = LauncherMemoryOverhead()
        vms = factory.informer(VIRTUAL_MACHINES, VirtualMachine)
        vmis = factory.informer(VIRTUAL_MACHINE_INSTANCES, VirtualMachineInstance)
        pods = factory.informer(PODS, label_selector=KUBEVIRT_POD_SELECTOR)
        self._pvcs = factory.informer(PERSISTENT_VOLUME_CLAIMS)
        replica_sets = factory.informer(
            VIRTUAL_MACHINE_INSTANCE_REPLICA_SETS, VirtualMachineInstanceReplicaSet
        )
        pools = factory.informer(VIRTUAL_MACHINE_POOLS, VirtualMachinePool)
        nodes = factory.informer(NODES)
        # CDI's kinds are watched once their CRDs are served (CDI may come later, or never).
        self._cdi = CdiInformers(factory)
        factory.informer(CUSTOM_RESOURCE_DEFINITIONS).add_event_handler(
            self._cdi.on_crd_add, self._cdi.on_crd_update, self._cdi.on_crd_delete
        )
        self.queues: dict[str, RateLimitingQueue] = {}
        self.controllers: list[Controller] = []

        instancetypes = self._instancetype_stores()
        vm = VMController(
            api=api,
            events=events,
            vm_store=vms.store,
            vmi_store=vmis.store,
            expectations=UIDTrackingControllerExpectations(),
            enqueue=self._queue("virtualmachine"),
            rng=self._rng,
            instancetype_store=instancetypes.instancetypes,
            cluster_instancetype_store=instancetypes.cluster_instancetypes,
            preference_store=instancetypes.preferences,
            cluster_preference_store=instancetypes.cluster_preferences,
            revision_store=instancetypes.revisions,
            config=config.current,
            vmi_volumes=vmi_volumes,
            pvc_store=self._pvcs.store,
            data_volumes=self._cdi.data_volumes,
        )
        _Handlers.connect(vms, vm, "vm")
        _Handlers.connect(vmis, vm, "vmi")
        _Handlers.connect(self._pvcs, vm, "pvc")
        self._cdi.on_data_volumes(lambda informer: _Handlers.connect(informer, vm, "data_volume"))
        self._add("virtualmachine", vm, threads.vm)

        vmi = VMIController(
            api=api,
            events=events,
            vmi_store=vmis.store,
            pod_store=pods.store,
            vm_store=vms.store,
            render_pod=self.render_pod,
            pod_expectations=UIDTrackingControllerExpectations(),
            vmi_expectations=ControllerExpectations(),
            enqueue=self._queue("virtualmachineinstance"),
            launcher_image=template.launcher_image,
            pvc_store=self._pvcs.store,
            cdis=self._cdi.cdis,
            cdi_config=self._cdi.cdi_config,
            data_volumes=self._cdi.data_volumes,
            config=config.current,
        )
        _Handlers.connect(vmis, vmi, "vmi")
        _Handlers.connect(pods, vmi, "pod")
        _Handlers.connect(self._pvcs, vmi, "pvc")
        _Handlers.connect(vms, vmi, "vm")
        self._cdi.on_data_volumes(lambda informer: _Handlers.connect(informer, vmi, "data_volume"))
        self._add("virtualmachineinstance", vmi, threads.vmi)

        replicaset = ReplicaSetController(
            api=api,
            events=events,
            rs_store=replica_sets.store,
            vmi_store=vmis.store,
            expectations=UIDTrackingControllerExpectations(),
            enqueue=self._queue("virtualmachinereplicaset"),
        )
        _Handlers.connect(replica_sets, replicaset, "rs")
        _Handlers.connect(vmis, replicaset, "vmi")
        self._add("virtualmachinereplicaset", replicaset, threads.replicaset)

        pool = PoolController(
            api=api,
            events=events,
            pool_store=pools.store,
            vm_store=vms.store,
            vmi_store=vmis.store,
            expectations=UIDTrackingControllerExpectations(),
            enqueue=self._queue("virtualmachinepool"),
            rng=self._rng,
        )
        _Handlers.connect(pools, pool, "pool")
        _Handlers.connect(vms, pool, "vm")
        _Handlers.connect(vmis, pool, "vmi")
        self._add("virtualmachinepool", pool, threads.pool)

        node = NodeController(
            api=api,
            events=events,
            node_store=nodes.store,
            vmi_store=vmis.store,
            pod_store=pods.store,
            enqueue=self._queue("node"),
        )
        _Handlers.connect(nodes, node, "node")
        _Handlers.connect(vmis, node, "vmi")
        self._add("node", node, threads.node)

        migrations = factory.informer(VIRTUAL_MACHINE_INSTANCE_MIGRATIONS)
        migration_policies = factory.informer(MIGRATION_POLICIES)
        migration = MigrationController(
            api=api,
            events=events,
            migration_store=migrations.store,
            vmi_store=vmis.store,
            pod_store=pods.store,
            render_pod=self.render_pod,
            config=lambda: config.current().migrations,
            enqueue=self._queue("migration"),
            policy_store=migration_policies.store,
            pvc_store=self._pvcs.store,
            launcher_image=template.launcher_image,
        )
        _Handlers.connect(migrations, migration, "migration")
        _Handlers.connect(vmis, migration, "vmi")
        _Handlers.connect(pods, migration, "pod")
        self._add("migration", migration, threads.migration)

        evacuation = EvacuationController(
            api=api,
            events=events,
            node_store=nodes.store,
            vmi_store=vmis.store,
            migration_store=migrations.store,
            pod_store=pods.store,
            migration_config=lambda: config.current().migrations,
            eviction_strategy=lambda: config.current().eviction_strategy,
            enqueue=self._queue("evacuation"),
        )
        _Handlers.connect(nodes, evacuation, "node")
        _Handlers.connect(vmis, evacuation, "vmi")
        _Handlers.connect(migrations, evacuation, "migration")
        self._add("evacuation", evacuation, threads.evacuation)

        if evictor is None and isinstance(api, KubeClient):
            evictor = SubresourceEvictor(api)
        kubevirts = factory.informer(KUBEVIRTS, namespace=namespace)
        # KubeVirt's pace: events are taken in 5 s late (one pass for a burst), failures are retried
        # after 5 s doubling to 5 min, and never more than one retry every 5 s.
        workload_queue = self._make_queue(
            "workload-update",
            MaxOfRateLimiter(
                [
                    ItemExponentialFailureRateLimiter(THROTTLE_SECONDS, 300.0),
                    BucketRateLimiter(1.0 / THROTTLE_SECONDS, 1),
                ]
            ),
        )
        workload_update = WorkloadUpdateController(
            api=api,
            events=events,
            kubevirt_store=kubevirts.store,
            vmi_store=vmis.store,
            migration_store=migrations.store,
            pod_store=pods.store,
            launcher_image=template.launcher_image,
            migration_config=lambda: config.current().migrations,
            evictor=evictor,
            enqueue=lambda key: workload_queue.add_after(key, THROTTLE_SECONDS),
            rng=self._rng,
        )
        _Handlers.connect(kubevirts, workload_update, "kubevirt")
        vmis.add_event_handler(on_update=workload_update.on_vmi_update)  # only a change in progress counts
        _Handlers.connect(migrations, workload_update, "migration")
        self._add("workload-update", workload_update, threads.workload_update)

        pdbs = factory.informer(POD_DISRUPTION_BUDGETS)
        disruption_budget = DisruptionBudgetController(
            api=api,
            events=events,
            pdb_store=pdbs.store,
            vmi_store=vmis.store,
            enqueue=self._queue("disruption-budget"),
        )
        _Handlers.connect(pdbs, disruption_budget, "pdb")
        _Handlers.connect(vmis, disruption_budget, "vmi")
        self._add("disruption-budget", disruption_budget, threads.disruption_budget)

        if freezer is not None:
            self._add_snapshot_controllers(api, events, factory, vms, vmis, threads, freezer)
        self.collectors = self._metric_collectors(vms, vmis, pods, migrations, instancetypes)

    def _metric_collectors(
        self,
        vms: Informer[VirtualMachine],
        vmis: Informer[VirtualMachineInstance],
        pods: Informer[JSON],
        migrations: Informer[JSON],
        instancetypes: InstancetypeStores,
    ) -> list[Collector]:
        """KubeVirt's virt-controller metrics: collectors that read these caches when scraped, and the
        phase-transition histograms the informers' updates feed."""
        lookup = store_lookup(instancetypes.by_resource())
        vmi_transitions = VMIPhaseTransitions()
        vmis.add_event_handler(on_update=vmi_transitions.observe_vmi_update)
        migration_transitions = MigrationPhaseTransitions()
        migrations.add_event_handler(on_update=migration_transitions.observe_migration_update)
        snapshots_succeeded = VMSnapshotSucceeded()
        self._factory.informer(VIRTUAL_MACHINE_SNAPSHOTS).add_event_handler(
            snapshots_succeeded.handle_snapshot, lambda _old, new: snapshots_succeeded.handle_snapshot(new)
        )
        return [
            VMIStatsCollector(
                vmis=vmis.store.list,
                pods=pods.store.list,
                migrations=migrations.store.list,
                lookup=lookup,
                eviction_strategy=lambda: self._config.current().eviction_strategy,
            ),
            VMStatsCollector(vms=vms.store.list, pvcs=self._pvcs.store.list, lookup=lookup),
            MigrationStatsCollector(migrations=migrations.store.list),
            vmi_transitions,
            migration_transitions,
            snapshots_succeeded,
            self._memory_overhead,
        ]

    def _add_snapshot_controllers(
        self,
        api: KubeApi,
        events: EventSink,
        factory: SharedInformerFactory,
        vms: Informer[VirtualMachine],
        vmis: Informer[VirtualMachineInstance],
        threads: Threads,
        freezer: Freezer,
    ) -> None:
        """Snapshots, their contents, VMs' volumeSnapshotStatuses and restores (KubeVirt's snapshot and
        restore controllers)."""
        snapshots = factory.informer(VIRTUAL_MACHINE_SNAPSHOTS, indexers={SOURCE_INDEX: source_index})
        contents = factory.informer(VIRTUAL_MACHINE_SNAPSHOT_CONTENTS)
        restores = factory.informer(VIRTUAL_MACHINE_RESTORES)  # the controller adds its index
        storage_classes = factory.informer(STORAGE_CLASSES)
        revisions = factory.informer(CONTROLLER_REVISIONS)
        crd_informers = SnapshotCrdInformers(factory)
        factory.informer(CUSTOM_RESOURCE_DEFINITIONS).add_event_handler(
            crd_informers.on_crd_add, crd_informers.on_crd_update, crd_informers.on_crd_delete
        )
        sources = SnapshotSources(vms.store, vmis.store)

        snapshot = SnapshotController(
            api=api,
            events=events,
            snapshot_store=snapshots.store,
            content_store=contents.store,
            sources=sources,
            pvc_store=self._pvcs.store,
            storage_class_store=storage_classes.store,
            snapshot_classes=crd_informers.volume_snapshot_classes,
            revision_store=revisions.store,
            enqueue=self._queue("vmsnapshot"),
        )
        _Handlers.connect(snapshots, snapshot, "snapshot")
        _Handlers.connect(contents, snapshot, "content")
        _Handlers.connect(vms, snapshot, "vm")
        _Handlers.connect(vmis, snapshot, "vmi")
        self._add("vmsnapshot", snapshot, threads.snapshot)

        content = ContentController(
            api=api,
            events=events,
            content_store=contents.store,
            snapshot_store=snapshots.store,
            sources=sources,
            volume_snapshots=crd_informers.volume_snapshots,
            storage_class_store=storage_classes.store,
            snapshot_classes=crd_informers.volume_snapshot_classes,
            freezer=freezer,
            enqueue=self._queue("vmsnapshotcontent"),
        )
        _Handlers.connect(contents, content, "content")
        _Handlers.connect(snapshots, content, "snapshot")
        crd_informers.on_volume_snapshots(
            lambda informer: _Handlers.connect(informer, content, "volume_snapshot")
        )
        self._add("vmsnapshotcontent", content, threads.snapshot)

        statuses = VolumeSnapshotStatusController(
            api=api,
            vm_store=vms.store,
            pvc_store=self._pvcs.store,
            storage_class_store=storage_classes.store,
            snapshot_classes=crd_informers.volume_snapshot_classes,
            enqueue=self._queue("vmsnapshotstatus"),
        )
        _Handlers.connect(vms, statuses, "vm")
        _Handlers.connect(self._pvcs, statuses, "pvc")
        crd_informers.on_volume_snapshot_classes(
            lambda informer: informer.add_event_handler(
                lambda _: statuses.enqueue_all(),
                lambda _old, _new: statuses.enqueue_all(),
                lambda _: statuses.enqueue_all(),
            )
        )
        self._add("vmsnapshotstatus", statuses, threads.snapshot)

        restore = RestoreController(
            api=api,
            events=events,
            restore_store=restores.store,
            snapshot_store=snapshots.store,
            content_store=contents.store,
            vm_store=vms.store,
            vmi_store=vmis.store,
            pvc_store=self._pvcs.store,
            storage_class_store=storage_classes.store,
            volume_snapshots=crd_informers.volume_snapshots,
            revision_store=revisions.store,
            enqueue=self._queue("vmrestore"),
        )
        _Handlers.connect(restores, restore, "restore")
        _Handlers.connect(self._pvcs, restore, "pvc")
        _Handlers.connect(vms, restore, "vm")
        self._add("vmrestore", restore, threads.restore)

        clones = factory.informer(VIRTUAL_MACHINE_CLONES)  # the controller adds its indexes
        clone = CloneController(
            api=api,
            events=events,
            clone_store=clones.store,
            snapshot_store=snapshots.store,
            content_store=contents.store,
            restore_store=restores.store,
            vm_store=vms.store,
            pvc_store=self._pvcs.store,
            enqueue=self._queue("vmclone"),
        )
        for informer, kind in ((clones, "clone"), (snapshots, "snapshot"), (restores, "restore")):
            _Handlers.connect(informer, clone, kind)
        _Handlers.connect(self._pvcs, clone, "pvc")
        _Handlers.connect(vms, clone, "vm")
        self._add("vmclone", clone, threads.clone)
        self._add_export_controller(api, events, vms, vmis, snapshots, contents, crd_informers, threads)

    def _add_export_controller(
        self,
        api: KubeApi,
        events: EventSink,
        vms: Informer[VirtualMachine],
        vmis: Informer[VirtualMachineInstance],
        snapshots: Informer[JSON],
        contents: Informer[JSON],
        crd_informers: SnapshotCrdInformers,
        threads: Threads,
    ) -> None:
        """VirtualMachineExports (KubeVirt's export controller). It reads every pod (a claim may be in use
        by any), and of KubeVirt's namespace the export CA bundle, the Ingresses (virt-exportproxy's),
        their TLS Secrets and the KubeVirt CR (the certificates' lifetime)."""
        factory, namespace = self._factory, self._namespace
        exports = factory.informer(VIRTUAL_MACHINE_EXPORTS, indexers=EXPORT_INDEXERS)
        all_pods = factory.informer(PODS)
        services = factory.informer(SERVICES, label_selector=f"{APP_LABEL}={EXPORTER_APP}")
        kubevirts = factory.informer(KUBEVIRTS, namespace=namespace)
        stores = ExportStores(
            exports=exports.store,
            pvcs=self._pvcs.store,
            pods=all_pods.store,
            services=services.store,
            vms=vms.store,
            vmis=vmis.store,
            snapshots=snapshots.store,
            contents=contents.store,
            volume_snapshots=crd_informers.volume_snapshots,
            config_maps=factory.informer(
                CONFIG_MAPS, namespace=namespace, field_selector=f"metadata.name={EXPORT_CA_CONFIG_MAP}"
            ).store,
            ingresses=factory.informer(INGRESSES, namespace=namespace).store,
            secrets=factory.informer(
                SECRETS, namespace=namespace, label_selector=UNMANAGED_SECRETS_SELECTOR
            ).store,
            kubevirts=kubevirts.store,
        )
        config = self._config
        image = self._template.exporter_image
        export = ExportController(
            api=api,
            events=events,
            stores=stores,
            kubevirt_namespace=namespace,
            render_pod=lambda obj: render_exporter_pod(
                obj, EXPORT_PREFIX, image=image, image_pull_policy=config.current().launcher.image_pull_policy
            ),
            expand_vm=vm_expander(
                InstancetypeSync(api=api, stores=self._instancetype_stores()), config.current
            ),
            ca=FileExportCA(),
            data_volumes=ApiDataVolumes(api),
            enqueue=self._queue("vmexport"),
        )
        for informer, kind in (
            (exports, "export"),
            (all_pods, "pod"),
            (services, "service"),
            (self._pvcs, "pvc"),
            (snapshots, "vmsnapshot"),
            (vms, "vm"),
            (vmis, "vmi"),
            (kubevirts, "kubevirt"),
        ):
            _Handlers.connect(informer, export, kind)
        self._add("vmexport", export, threads.export)

    def _instancetype_stores(self) -> InstancetypeStores:
        """The instance type and ControllerRevision caches the VM and export controllers read (one watch
        each)."""
        factory = self._factory
        return InstancetypeStores(
            instancetypes=factory.informer(VIRTUAL_MACHINE_INSTANCETYPES, VirtualMachineInstancetype).store,
            cluster_instancetypes=factory.informer(
                VIRTUAL_MACHINE_CLUSTER_INSTANCETYPES, VirtualMachineClusterInstancetype
            ).store,
            preferences=factory.informer(VIRTUAL_MACHINE_PREFERENCES, VirtualMachinePreference).store,
            cluster_preferences=factory.informer(
                VIRTUAL_MACHINE_CLUSTER_PREFERENCES, VirtualMachineClusterPreference
            ).store,
            revisions=factory.informer(CONTROLLER_REVISIONS).store,
        )

    def _queue(self, name: str) -> Callable[[str], None]:
        return self._make_queue(name).add

    def _make_queue(self, name: str, rate_limiter: RateLimiter | None = None) -> RateLimitingQueue:
        queue = RateLimitingQueue(name=KUBEVIRT_QUEUE_NAMES.get(name, name), rate_limiter=rate_limiter)
        self.queues[name] = queue
        return queue

    def _add(self, name: str, reconciler: Reconciler, workers: int) -> None:
        self.controllers.append(Controller(name, self.queues[name], reconciler, workers=workers))

    def render_pod(self, vmi: VirtualMachineInstance) -> JSON:
        """The launcher pod for ``vmi`` under the configuration in force now."""
        config: ClusterConfig = self._config.current()
        template = replace(
            self._template, qemu_timeout_jitter_seconds=self._rng.randrange(QEMU_TIMEOUT_JITTER_SECONDS)
        )
        namespace = vmi.metadata.namespace if vmi.metadata else None

        def find_pvc(name: str) -> JSON | None:
            return self._pvcs.store.get_by_key(key_for(namespace, name))

        pod = render_launcher_pod(vmi, config, template, find_pvc)
        # As KubeVirt's template service, each render records the overhead it sized the pod for.
        architecture = vmi.spec.architecture or config.default_architecture
        ratio = config.launcher.additional_guest_memory_overhead_ratio
        overhead = memory_overhead(vmi, architecture, ratio)
        name = (vmi.metadata.name if vmi.metadata else None) or ""
        self._memory_overhead.record(namespace or "", name, overhead.value())
        return pod

    def start(self, stop: threading.Event, *, sync_timeout: float = 120.0) -> bool:
        """Starts the informers, waits for their caches, then the workers; False if the caches never
        synced before ``stop`` or the timeout."""
        self._factory.start()
        deadline = time.monotonic() + sync_timeout
        # Twice: the first lists of the CRDs start the informers of the kinds they serve (CDI's, the
        # CSI snapshots'), whose caches are waited for too.
        for _ in range(2):
            if not self._factory.wait_for_cache_sync(max(0.0, deadline - time.monotonic())) or stop.is_set():
                return False
        for controller in self.controllers:
            threading.Thread(target=controller.run, args=(stop,), name=controller.name, daemon=True).start()
        return True

    def shut_down(self) -> None:
        for queue in self.queues.values():
            queue.shut_down()
        self._factory.stop()
