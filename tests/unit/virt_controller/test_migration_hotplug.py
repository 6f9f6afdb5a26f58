"""Hotplugged volumes follow a live migration (KubeVirt's migration ``createAttachmentPod`` and the
hand-off's ``targetAttachmentPodUID``): the migration and VMI controllers run together against a fake API
server; the test plays the scheduler, the kubelets and both virt-handlers."""

from __future__ import annotations

from kubevirt.client import (
    PERSISTENT_VOLUME_CLAIMS,
    PODS,
    VIRTUAL_MACHINE_INSTANCE_MIGRATIONS,
    VIRTUAL_MACHINE_INSTANCES,
)
from kubevirt.client.errors import ForbiddenError
from kubevirt.controller import RequeueAfter
from kubevirt.virt_config.migrations import MigrationConfig
from kubevirt.virt_controller.watch.migration import MigrationController
from kubevirt.virt_controller.watch.pods import pod_name

from .fakes import JSON, Cluster, FakeQueue
from .harness import (
    LAUNCHER_IMAGE,
    NAMESPACE,
    Controllers,
    render_pod,
    schedule_pod,
    set_vmi_phase,
    vmi_manifest,
)

VMI = "testvmi"
MIGRATION = "mig1"
SOURCE_NODE, TARGET_NODE = "node01", "node02"
HOTPLUGGED = {"name": "extra", "persistentVolumeClaim": {"claimName": "disk-h", "hotpluggable": True}}


def _pvc(name: str) -> JSON:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {"accessModes": ["ReadWriteMany"], "volumeMode": "Filesystem"},
        "status": {"phase": "Bound", "capacity": {"storage": "1Gi"}},
    }


class World:
    """The VMI and migration controllers over one cluster, with the actors' moves as methods."""

    def __init__(self) -> None:
        self.cluster = Cluster()
        self.api = self.cluster.api
        self.controllers = Controllers(self.cluster)
        self.events = self.controllers.events
        self.queue = FakeQueue()
        self.errors: list[Exception] = []
        pods = self.cluster.informer(PODS)
        migrations = self.cluster.informer(VIRTUAL_MACHINE_INSTANCE_MIGRATIONS)
        vmis = self.cluster.informer(VIRTUAL_MACHINE_INSTANCES)
        self.migration_controller = MigrationController(
            api=self.api,
            events=self.events,
            migration_store=migrations.store,
            vmi_store=vmis.store,
            pod_store=pods.store,
            render_pod=render_pod,
            config=lambda: MigrationConfig(),
            enqueue=self.queue.add,
            clock=self.api.clock,
            pvc_store=self.cluster.informer(PERSISTENT_VOLUME_CLAIMS).store,
            launcher_image=LAUNCHER_IMAGE,
        )
        for informer, kind in ((migrations, "migration"), (vmis, "vmi"), (pods, "pod")):
            informer.add_event_handler(
                getattr(self.migration_controller, f"on_{kind}_add"),
                getattr(self.migration_controller, f"on_{kind}_update"),
                getattr(self.migration_controller, f"on_{kind}_delete"),
            )

    def settle(self) -> None:
        """Works the VMI and migration queues until neither has anything left."""
        for _ in range(50):
            self.controllers.run(only=("vmi",))
            worked = False
            while (key := self.queue.pop()) is not None:
                worked = True
                try:
                    self.migration_controller.reconcile(key)
                except RequeueAfter:
                    pass
                except Exception as err:  # the real queue retries these with backoff
                    self.errors.append(err)
                self.cluster.sync()
            if not worked and not self.controllers.queues["vmi"].keys:
                return
        raise AssertionError("the controllers did not settle")

    # -- reads ---------------------------------------------------------------------------------------

    def vmi(self) -> JSON:
        return self.api.get(VIRTUAL_MACHINE_INSTANCES, NAMESPACE, VMI)

    def migration(self) -> JSON:
        return self.api.get(VIRTUAL_MACHINE_INSTANCE_MIGRATIONS, NAMESPACE, MIGRATION)

    def phase(self) -> str:
        return str(self.migration().get("status", {}).get("phase", ""))

    def pods(self, app: str) -> list[JSON]:
        return [
            p for p in self.api.find(PODS, NAMESPACE) if p["metadata"]["labels"].get("kubevirt.io") == app
        ]

    def launcher_on(self, node: str) -> JSON:
        (pod,) = [p for p in self.pods("virt-launcher") if p["spec"].get("nodeName") == node]
        return pod

    def target_launcher(self) -> JSON:
        (pod,) = [
            p for p in self.pods("virt-launcher") if "kubevirt.io/migrationJobUID" in p["metadata"]["labels"]
        ]
        return pod

    def attachment_pods_of(self, launcher: JSON) -> list[JSON]:
        uid = launcher["metadata"]["uid"]
        return [p for p in self.pods("hotplug-disk") if p["metadata"]["ownerReferences"][0]["uid"] == uid]

    def volume_status(self, name: str) -> JSON:
        (entry,) = [e for e in self.vmi()["status"]["volumeStatus"] if e["name"] == name]
        return dict(entry)

    # -- the actors ----------------------------------------------------------------------------------

    def running_vmi(self, *volumes: JSON) -> None:
        """A Running VMI on node01 (on a host without SELinux) with ``volumes`` hotplugged into it, each
        attached by a running attachment pod and reported Ready by virt-handler."""
        manifest = vmi_manifest(VMI)
        manifest["spec"]["volumes"] = [{"name": "boot", "containerDisk": {"image": "cirros"}}]
        self.api.create(VIRTUAL_MACHINE_INSTANCES, NAMESPACE, manifest)
        self.settle()
        schedule_pod(self.cluster, pod_name(self.pods("virt-launcher")[0]), SOURCE_NODE)
        self.settle()
        set_vmi_phase(self.cluster, VMI, "Running", selinuxContext="none")
        self.settle()
        if not volumes:
            return
        self.api.edit(
            VIRTUAL_MACHINE_INSTANCES, NAMESPACE, VMI, lambda v: v["spec"]["volumes"].extend(volumes)
        )
        self.settle()
        (attachment,) = self.attachment_pods_of(self.launcher_on(SOURCE_NODE))
        self.kubelet_runs(attachment, SOURCE_NODE, "hotplug-disk")
        self.settle()
        self.handler_reports_volumes_ready()

    def handler_reports_volumes_ready(self) -> None:
        def ready(vmi: JSON) -> None:
            for entry in vmi["status"]["volumeStatus"]:
                if "hotplugVolume" in entry:
                    entry.update(phase="Ready", reason="VolumeReady", message="Volume is ready", target="sda")

        self.api.edit(VIRTUAL_MACHINE_INSTANCES, NAMESPACE, VMI, ready)
        self.settle()

    def migrate(self) -> None:
        self.api.clock.advance(10)
        self.api.put(
            VIRTUAL_MACHINE_INSTANCE_MIGRATIONS,
            {
                "apiVersion": "kubevirt.io/v1",
                "kind": "VirtualMachineInstanceMigration",
                "metadata": {"name": MIGRATION, "namespace": NAMESPACE},
                "spec": {"vmiName": VMI},
            },
        )
        self.settle()

    def kubelet_runs(self, pod: JSON, node: str, container: str = "compute") -> None:
        """The scheduler binds the pod and the kubelet starts its one container, which is ready."""
        self.api.clock.advance(5)  # what is created from here on is newer

        def run(p: JSON) -> None:
            p["spec"]["nodeName"] = node
            p["status"] = {
                "phase": "Running",
                "containerStatuses": [{"name": container, "ready": True, "state": {"running": {}}}],
            }

        self.api.edit(PODS, NAMESPACE, pod_name(pod), run)
        self.settle()

    def handlers_migrate(self) -> None:
        """Both virt-handlers carry the migration out: the VMI now runs on the target node, the source
        launcher exits."""
        state = {"targetNodeAddress": "10.0.0.2"}
        self.api.edit(
            VIRTUAL_MACHINE_INSTANCES, NAMESPACE, VMI, lambda v: v["status"]["migrationState"].update(state)
        )
        self.settle()
        started = {"startTimestamp": "2026-01-01T12:01:00Z"}
        self.api.edit(
            VIRTUAL_MACHINE_INSTANCES, NAMESPACE, VMI, lambda v: v["status"]["migrationState"].update(started)
        )
        self.settle()
        target = self.target_launcher()

        def moved(vmi: JSON) -> None:
            vmi["status"]["migrationState"].update(completed=True, endTimestamp="2026-01-01T12:02:00Z")
            vmi["status"]["nodeName"] = TARGET_NODE
            vmi["status"]["activePods"] = {target["metadata"]["uid"]: TARGET_NODE}
            vmi["metadata"]["labels"]["kubevirt.io/nodeName"] = TARGET_NODE

        self.api.edit(VIRTUAL_MACHINE_INSTANCES, NAMESPACE, VMI, moved)
        source = self.launcher_on(SOURCE_NODE)
        self.api.edit(PODS, NAMESPACE, pod_name(source), lambda p: p["status"].update(phase="Succeeded"))
        self.settle()


def _ready_target(world: World) -> JSON:
    """The migration's target launcher pod, scheduled and running on node02."""
    target = world.target_launcher()
    world.kubelet_runs(target, TARGET_NODE)
    return world.target_launcher()


# -- the attachment pod of the target ------------------------------------------------------------------


def test_a_ready_target_pod_gets_an_attachment_pod_for_the_hotplugged_volumes() -> None:
    world = World()
    world.api.put(PERSISTENT_VOLUME_CLAIMS, _pvc("disk-h"))
    world.running_vmi(HOTPLUGGED)
    world.migrate()
    target = world.target_launcher()
    assert world.attachment_pods_of(target) == []  # not before the target pod is ready

    target = _ready_target(world)
    (attachment,) = world.attachment_pods_of(target)
    migration = world.migration()
    meta = attachment["metadata"]
    assert meta["labels"] == {
        "kubevirt.io": "hotplug-disk",
        "kubevirt.io/migrationJobUID": migration["metadata"]["uid"],
    }
    assert meta["annotations"] == {"kubevirt.io/migrationJobName": MIGRATION}
    assert meta["ownerReferences"] == [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "name": pod_name(target),
            "uid": target["metadata"]["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    claims = [v for v in attachment["spec"]["volumes"] if "persistentVolumeClaim" in v]
    assert claims == [{"name": "extra", "persistentVolumeClaim": {"claimName": "disk-h"}}]
    # The VMI's volume status (Ready on the source) is left out: the claim is mounted for the target.
    assert {"name": "extra", "mountPath": "/extra"} in attachment["spec"]["containers"][0]["volumeMounts"]
    affinity = attachment["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]
    assert affinity["nodeSelectorTerms"][0]["matchExpressions"][0]["values"] == [TARGET_NODE]
    assert (
        f"{NAMESPACE}/{MIGRATION}",
        "Normal",
        "SuccessfulCreate",
        f"Created attachment pod {pod_name(attachment)}",
    ) in world.events.recorded
    # Until the attachment pod is ready the migration waits, and the launcher stays the target pod.
    assert world.phase() == "Pending"
    assert "migrationState" not in world.vmi()["status"]
    assert world.errors == []


def test_the_attachment_pod_is_created_once() -> None:
    world = World()
    world.api.put(PERSISTENT_VOLUME_CLAIMS, _pvc("disk-h"))
    world.running_vmi(HOTPLUGGED)
    world.migrate()
    target = _ready_target(world)
    world.migration_controller.reconcile(f"{NAMESPACE}/{MIGRATION}")
    world.api.edit(PODS, NAMESPACE, pod_name(target), lambda p: p["metadata"]["labels"].update(touched="1"))
    world.settle()
    assert len(world.attachment_pods_of(target)) == 1
    assert len(world.pods("hotplug-disk")) == 2  # the source's and the target's
    assert world.api.count_writes("create", PODS) == 4  # two launchers, two attachment pods


def test_no_attachment_pod_without_hotplugged_volumes() -> None:
    world = World()
    world.running_vmi()
    world.migrate()
    target = _ready_target(world)
    assert world.pods("hotplug-disk") == []
    assert world.phase() == "PreparingTarget"
    assert "targetAttachmentPodUID" not in world.vmi()["status"]["migrationState"]
    assert world.vmi()["status"]["migrationState"]["targetPod"] == pod_name(target)


def test_a_missing_claim_holds_the_attachment_pod_back() -> None:
    world = World()
    world.api.put(PERSISTENT_VOLUME_CLAIMS, _pvc("disk-h"))
    world.running_vmi(HOTPLUGGED)
    world.api.remove(PERSISTENT_VOLUME_CLAIMS, NAMESPACE, "disk-h")
    world.migrate()
    _ready_target(world)
    assert len(world.pods("hotplug-disk")) == 1  # the source's only
    assert [str(e) for e in world.errors] == ["failed to get PVC map: claim disk-h not found"]
    assert world.phase() == "Pending"


def test_a_refused_attachment_pod_is_reported_on_the_vmi() -> None:
    world = World()
    world.api.put(PERSISTENT_VOLUME_CLAIMS, _pvc("disk-h"))
    world.running_vmi(HOTPLUGGED)
    world.migrate()
    target = world.target_launcher()
    world.api.fail_next[("create", "pods")] = ForbiddenError(403, "Forbidden", "pods is forbidden: quota")
    world.kubelet_runs(target, TARGET_NODE)
    assert (
        f"{NAMESPACE}/{VMI}",
        "Warning",
        "FailedCreate",
        "Error creating attachment pod: pods is forbidden: quota",
    ) in world.events.recorded
    assert [str(e) for e in world.errors] == ["failed to create attachment pod: pods is forbidden: quota"]
    # The retry makes it.
    world.queue.add(f"{NAMESPACE}/{MIGRATION}")
    world.settle()
    assert len(world.attachment_pods_of(target)) == 1


# -- the hand-off --------------------------------------------------------------------------------------


def test_the_hand_off_names_the_targets_attachment_pod() -> None:
    world = World()
    world.api.put(PERSISTENT_VOLUME_CLAIMS, _pvc("disk-h"))
    world.running_vmi(HOTPLUGGED)
    world.migrate()
    target = _ready_target(world)
    (attachment,) = world.attachment_pods_of(target)
    world.kubelet_runs(attachment, TARGET_NODE, "hotplug-disk")
    assert world.phase() == "PreparingTarget"
    state = world.vmi()["status"]["migrationState"]
    assert state["targetAttachmentPodUID"] == attachment["metadata"]["uid"]
    assert state["targetPod"] == pod_name(target)
    assert world.errors == []


def test_the_hand_off_waits_for_the_attachment_pod() -> None:
    """A Scheduled migration whose target pod has no attachment pod (it went away): no hand-off, an
    error retried, until one is there."""
    world = World()
    world.api.put(PERSISTENT_VOLUME_CLAIMS, _pvc("disk-h"))
    world.running_vmi(HOTPLUGGED)
    world.migrate()
    target = _ready_target(world)
    (attachment,) = world.attachment_pods_of(target)
    world.api.remove(PODS, NAMESPACE, pod_name(attachment))
    world.api.edit(
        VIRTUAL_MACHINE_INSTANCE_MIGRATIONS,
        NAMESPACE,
        MIGRATION,
        lambda m: m["status"].update(phase="Scheduled"),
    )
    world.settle()
    assert [str(e) for e in world.errors] == ["target attachment pod not found"]
    assert world.phase() == "Scheduled"
    assert "migrationState" not in world.vmi()["status"]

    replacement = {
        **attachment,
        "metadata": {**attachment["metadata"], "name": "hp-volume-again", "uid": "again-uid"},
        "status": {
            "phase": "Running",
            "containerStatuses": [{"name": "hotplug-disk", "ready": True, "state": {"running": {}}}],
        },
    }
    world.api.put(PODS, replacement)
    world.settle()
    assert world.phase() == "PreparingTarget"
    assert world.vmi()["status"]["migrationState"]["targetAttachmentPodUID"] == "again-uid"


def test_a_failed_attachment_pod_fails_the_migration() -> None:
    world = World()
    world.api.put(PERSISTENT_VOLUME_CLAIMS, _pvc("disk-h"))
    world.running_vmi(HOTPLUGGED)
    world.migrate()
    target = _ready_target(world)
    (attachment,) = world.attachment_pods_of(target)
    world.kubelet_runs(attachment, TARGET_NODE, "hotplug-disk")
    world.api.edit(PODS, NAMESPACE, pod_name(attachment), lambda p: p["status"].update(phase="Failed"))
    world.settle()
    assert world.phase() == "Failed"
    messages = [m for _, _, reason, m in world.events.recorded if reason == "FailedMigration"]
    assert messages == ["Migration failed because target attachment pod shutdown during migration"]


# -- after the migration -------------------------------------------------------------------------------


def test_after_the_migration_the_volume_status_names_the_targets_attachment_pod() -> None:
    world = World()
    world.api.put(PERSISTENT_VOLUME_CLAIMS, _pvc("disk-h"))
    world.running_vmi(HOTPLUGGED)
    (source_attachment,) = world.attachment_pods_of(world.launcher_on(SOURCE_NODE))
    assert world.volume_status("extra")["hotplugVolume"]["attachPodName"] == pod_name(source_attachment)
    world.migrate()
    target = _ready_target(world)
    (attachment,) = world.attachment_pods_of(target)
    world.kubelet_runs(attachment, TARGET_NODE, "hotplug-disk")
    # While the VMI runs on the source, its volume status stays with the source's attachment pod.
    assert world.volume_status("extra")["hotplugVolume"]["attachPodName"] == pod_name(source_attachment)

    world.handlers_migrate()
    assert world.phase() == "Succeeded"
    entry = world.volume_status("extra")
    assert entry["hotplugVolume"] == {
        "attachPodName": pod_name(attachment),
        "attachPodUID": attachment["metadata"]["uid"],
    }
    assert entry["phase"] == "Ready"  # virt-handler's phase is left alone
    # The source's attachment pod went with its finished launcher; the target's is the only one.
    assert [pod_name(p) for p in world.pods("hotplug-disk")] == [pod_name(attachment)]
    assert world.api.count_writes("create", PODS) == 4
    assert world.errors == []
