"""virt-handler's VM controller against a fake API and a fake launcher: socket lookup, phases, status."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kubevirt.client import NODES, VIRTUAL_MACHINE_INSTANCES
from kubevirt.controller import RequeueAfter, Store
from kubevirt.handler_launcher_com.cmd.client import CommandFailedError
from kubevirt.network.cache import PodIfaceCache
from kubevirt.virt_handler import phase
from kubevirt.virt_handler.container_disk.mounter import ContainerDiskError, Mounter
from kubevirt.virt_handler.domain_cache import DomainCache
from kubevirt.virt_handler.domain_notify import DomainNotify
from kubevirt.virt_handler.guest_agent import REQUIRED_COMMANDS
from kubevirt.virt_handler.heartbeat import Heartbeat
from kubevirt.virt_handler.launcher_sockets import SocketLookupError, find_launcher_socket
from kubevirt.virt_handler.network import CONFIG_INVALID_REASON, HandlerNetwork, NetworkSetupError
from kubevirt.virt_handler.vm_controller import SYNC_FAILED_REASON, Network, VMController
from kubevirt_testing.events import RecordedEvents
from kubevirt_testing.fake_kube_api import FakeKubeApi
from kubevirt_testing.launcher_socket import launcher_socket

NODE = "node01"
POD_UID = "pod-1"
JSON = dict[str, Any]


class FakeLauncher:
    def __init__(self) -> None:
        self.domain: JSON | None = None
        self.calls: list[str] = []
        self.fail: str | None = None
        # What GetGuestInfo answers: an agent offering every command KubeVirt requires.
        self.guest_info: JSON = {
            "guestAgentVersion": "7.2.0",
            "supportedCommands": [{"name": name, "enabled": True} for name in REQUIRED_COMMANDS],
        }

    def sync_vmi(self, vmi: JSON, options: Any = None) -> None:
        self.calls.append("SyncVirtualMachine")
        if self.fail:
            raise CommandFailedError("SyncVirtualMachine", self.fail)
        self.domain = _domain("Running", "Booted")

    def vmi_command(self, command: str, vmi: JSON) -> None:
        self.calls.append(command)
        self.domain = _domain("Shutoff", "Destroyed") if command == "KillVirtualMachine" else None

    def get_domain(self) -> JSON | None:
        return self.domain

    def get_guest_info(self) -> JSON:
        self.calls.append("GetGuestInfo")
        return self.guest_info

    def close(self) -> None:
        pass


def _domain(state: str, reason: str) -> JSON:
    nic = {"Alias": {"Name": "ua-default"}, "MAC": {"MAC": "52:54:00:00:00:01"}}
    return {
        "Spec": {
            "Devices": {"Interfaces": [nic]},
            "Features": {"ACPI": {}},
            "OS": {"Type": {"Machine": "pc-q35-7.2"}},
        },
        "Status": {"Status": state, "Reason": reason, "Interfaces": None, "OSInfo": {"Name": ""}},
    }


def _vmi(phase_name: str = "Scheduled") -> JSON:
    return {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachineInstance",
        "metadata": {"name": "tiny", "namespace": "default", "labels": {"kubevirt.io/nodeName": NODE}},
        "spec": {"domain": {}},
        "status": {"phase": phase_name, "nodeName": NODE, "activePods": {POD_UID: NODE}},
    }


@pytest.fixture
def pods_dir(tmp_path: Path) -> Iterator[Path]:
    with launcher_socket(tmp_path, POD_UID, listening=False):
        yield tmp_path


class Harness:
    def __init__(
        self, pods_dir: Path, vmi: JSON, network: Network | None = None, notify: DomainNotify | None = None
    ) -> None:
        self.api = FakeKubeApi()
        self.store: Store[JSON] = Store()
        self.launcher = FakeLauncher()
        self.events = RecordedEvents()
        self.connected: list[Path] = []
        self.put(self.api.add(VIRTUAL_MACHINE_INSTANCES, vmi))

        def connect(path: Path) -> FakeLauncher:
            self.connected.append(path)
            return self.launcher

        self.controller = VMController(
            api=self.api,
            events=self.events,
            vmi_store=self.store,
            node=NODE,
            pods_dir=pods_dir,
            connect=connect,
            network=network,
            notify=notify,
        )

    def put(self, vmi: JSON) -> None:
        self.store.upsert(vmi)

    def reconcile(self) -> JSON:
        with contextlib.suppress(RequeueAfter):
            self.controller.reconcile("default/tiny")
        current = self.api.get(VIRTUAL_MACHINE_INSTANCES, "default", "tiny")
        self.put(current)
        return current

    def start(self) -> JSON:
        """The sync that starts the guest, then the reconcile its domain event queues, which reports it."""
        self.reconcile()
        return self.reconcile()


def test_a_scheduled_vmi_is_synced_and_becomes_running(pods_dir: Path) -> None:
    harness = Harness(pods_dir, _vmi())
    synced = harness.reconcile()
    assert harness.launcher.calls == ["SyncVirtualMachine"]
    assert synced["status"]["phase"] == "Scheduled"  # what the one GetDomain before the sync saw
    vmi = harness.reconcile()
    assert harness.connected == [pods_dir / POD_UID / "volumes/kubernetes.io~empty-dir/sockets/launcher-sock"]
    assert harness.launcher.calls == ["SyncVirtualMachine"]  # not synced again before its phase caught up
    assert vmi["status"]["phase"] == "Running"
    assert vmi["status"]["nodeName"] == NODE
    assert vmi["status"]["interfaces"] == [
        {
            "name": "default",
            "mac": "52:54:00:00:00:01",
            "infoSource": "domain",
            "queueCount": 1,
            "linkState": "up",
        }
    ]
    assert [s["phase"] for s in vmi["status"]["phaseTransitionTimestamps"]] == ["Running"]
    assert harness.events.seen == [
        ("Normal", "Created", "VirtualMachineInstance defined."),
        ("Normal", "Started", "VirtualMachineInstance started."),
    ]


# virt-controller's Ready=False while the guest is not running yet.
_NOT_RUNNING = {
    "type": "Ready",
    "status": "False",
    "reason": "GuestNotRunning",
    "message": "Guest VM is not reported as running",
    "lastProbeTime": "2026-12-01T00:00:00Z",
    "lastTransitionTime": "2026-12-01T00:00:00Z",
}
_MIGRATABLE = {"type": "LiveMigratable", "status": "False", "reason": "Other"}


def _scheduled_by_the_controller() -> JSON:
    vmi = _vmi()
    vmi["status"]["conditions"] = [dict(_NOT_RUNNING), dict(_MIGRATABLE)]
    return vmi


def _ready(vmi: JSON) -> JSON:
    (ready,) = [c for c in vmi["status"]["conditions"] if c["type"] == "Ready"]
    return ready


def test_the_first_running_write_carries_ready_true_as_the_pods_would_be_copied(pods_dir: Path) -> None:
    harness = Harness(pods_dir, _scheduled_by_the_controller())
    harness.reconcile()  # the sync (its write: the conditions that do not wait for the domain)
    harness.api.writes.clear()
    vmi = harness.reconcile()
    assert vmi["status"]["phase"] == "Running"
    assert harness.api.writes == [("update", "virtualmachineinstances", "default", "tiny")]
    ready = _ready(vmi)
    # The kubelet's Ready=True has neither reason nor message; it replaces the False where it stood.
    assert (ready["status"], ready.get("reason"), ready.get("message")) == ("True", None, None)
    assert ready["lastProbeTime"] is None
    assert ready["lastTransitionTime"].endswith("Z")
    assert [c["type"] for c in vmi["status"]["conditions"]][:2] == ["Ready", "LiveMigratable"]


def test_ready_is_not_set_again_once_virt_controller_took_it_back(pods_dir: Path) -> None:
    harness = Harness(pods_dir, _scheduled_by_the_controller())
    running = harness.start()
    not_ready = {**_NOT_RUNNING, "reason": "ContainersNotReady", "message": "containers with unready status"}
    running["status"]["conditions"] = [not_ready, *running["status"]["conditions"][1:]]
    harness.put(harness.api.update(VIRTUAL_MACHINE_INSTANCES, "default", running))  # virt-controller's write
    harness.api.writes.clear()
    vmi = harness.reconcile()
    assert harness.api.writes == []  # only the first Running write sets it; the pod decides after that
    assert _ready(vmi)["reason"] == "ContainersNotReady"


class PausedStart(FakeLauncher):
    """A guest started paused (startStrategy Paused): Running with a Paused condition."""

    def sync_vmi(self, vmi: JSON, options: Any = None) -> None:
        super().sync_vmi(vmi)
        self.domain = _domain("Paused", "User")


def test_a_guest_paused_at_start_is_running_but_not_ready(pods_dir: Path) -> None:
    harness = Harness(pods_dir, _scheduled_by_the_controller())
    harness.launcher = PausedStart()
    vmi = harness.start()
    assert vmi["status"]["phase"] == "Running"
    assert "Paused" in [c["type"] for c in vmi["status"]["conditions"]]
    assert _ready(vmi) == _NOT_RUNNING  # the paused pod's readiness gate is False: the controller says so


@pytest.mark.parametrize(
    ("field", "value"),
    [
        (("spec", "readinessProbe"), {"tcpSocket": {"port": 22}}),  # on the compute container
        (("metadata", "annotations"), {"sidecar.istio.io/inject": "True"}),  # istio-proxy's own probe
    ],
    ids=["readiness-probe", "istio-proxy"],
)
def test_a_pod_with_a_probe_still_to_pass_leaves_ready_to_the_pod(
    pods_dir: Path, field: tuple[str, str], value: JSON
) -> None:
    vmi = _scheduled_by_the_controller()
    vmi[field[0]][field[1]] = value
    harness = Harness(pods_dir, vmi)
    running = harness.start()
    assert running["status"]["phase"] == "Running"
    assert _ready(running) == _NOT_RUNNING


def test_a_vmi_being_deleted_is_not_made_ready_by_its_running_write(pods_dir: Path) -> None:
    # A restarted handler finds the guest running under a VMI still Scheduled, and deleted meanwhile.
    vmi = _scheduled_by_the_controller()
    vmi["metadata"]["deletionTimestamp"] = "2026-12-01T00:00:01Z"
    harness = Harness(pods_dir, vmi)
    harness.launcher.domain = _domain("Running", "Booted")
    deleting = harness.reconcile()
    assert "SyncVirtualMachine" not in harness.launcher.calls  # it is being stopped, not started
    assert deleting["status"]["phase"] == "Running"
    assert _ready(deleting) == _NOT_RUNNING


def test_a_failed_sync_sets_synchronized_false_and_keeps_the_phase(pods_dir: Path) -> None:
    harness = Harness(pods_dir, _vmi())
    harness.launcher.fail = "no such disk"
    vmi = harness.reconcile()
    assert vmi["status"]["phase"] == "Scheduled"
    (condition,) = [c for c in vmi["status"]["conditions"] if c["type"] == "Synchronized"]
    assert (condition["type"], condition["status"], condition["reason"]) == (
        "Synchronized",
        "False",
        SYNC_FAILED_REASON,
    )
    assert "no such disk" in condition["message"]


def test_a_deleted_running_vmi_is_killed_then_undefined(pods_dir: Path) -> None:
    harness = Harness(pods_dir, _vmi())
    harness.start()
    deleting = harness.api.get(VIRTUAL_MACHINE_INSTANCES, "default", "tiny")
    deleting["metadata"]["deletionTimestamp"] = "2026-12-01T00:00:00Z"
    harness.put(deleting)
    harness.reconcile()
    assert harness.launcher.calls[-1] == "KillVirtualMachine"
    vmi = harness.reconcile()
    assert harness.launcher.calls[-1] == "DeleteVirtualMachine"
    # Destroyed with ACPI and the default grace period: the guest did not stop by itself.
    assert vmi["status"]["phase"] == "Failed"


def test_without_a_socket_the_vmi_waits(tmp_path: Path) -> None:
    (tmp_path / POD_UID).mkdir()  # the pod is there, its launcher not yet ready
    harness = Harness(tmp_path, _vmi())
    with pytest.raises(RequeueAfter):
        harness.controller.reconcile("default/tiny")
    assert harness.launcher.calls == []


def test_a_symlinked_sockets_directory_is_not_followed(tmp_path: Path, pods_dir: Path) -> None:
    evil = tmp_path / "evil"
    (evil / "volumes").mkdir(parents=True)
    (evil / "volumes" / "kubernetes.io~empty-dir").symlink_to(
        pods_dir / POD_UID / "volumes/kubernetes.io~empty-dir"
    )
    with pytest.raises(SocketLookupError, match="No command socket"):
        find_launcher_socket(tmp_path, {"evil": NODE}, NODE)
    with pytest.raises(SocketLookupError, match="No command socket"):
        find_launcher_socket(pods_dir, {POD_UID: "other-node"}, NODE)


@pytest.mark.parametrize(
    ("current", "state", "reason", "grace", "expected"),
    [
        ("Scheduled", "Running", "Booted", None, "Running"),
        ("Running", "Paused", "User", None, "Running"),
        ("Running", "Paused", "PostcopyFailed", None, "Failed"),
        ("Running", "Shutoff", "Shutdown", None, "Succeeded"),
        ("Running", "Shutoff", "Destroyed", 0, "Succeeded"),
        ("Running", "Shutoff", "Destroyed", 30, "Failed"),
        ("Running", "Crashed", "Panicked", None, "Failed"),
        ("Scheduled", "ShuttingDown", "User", None, "Scheduled"),
    ],
)
def test_phase_from_domain(current: str, state: str, reason: str, grace: int | None, expected: str) -> None:
    result = phase.phase_from_domain(
        current, _domain(state, reason), launcher_unresponsive=False, vmi_grace=grace
    )
    assert result == expected


def test_phase_without_a_domain() -> None:
    assert (
        phase.phase_from_domain("Scheduled", None, launcher_unresponsive=False, vmi_grace=None) == "Scheduled"
    )
    assert phase.phase_from_domain("Scheduled", None, launcher_unresponsive=True, vmi_grace=None) == "Failed"
    assert phase.phase_from_domain("Running", None, launcher_unresponsive=False, vmi_grace=None) == "Failed"


def test_heartbeat_labels_and_annotates_the_node() -> None:
    api = FakeKubeApi()
    api.add(NODES, {"metadata": {"name": NODE}})
    assert Heartbeat(api, NODE).beat() is True
    node = api.get(NODES, None, NODE)
    assert node["metadata"]["labels"]["kubevirt.io/schedulable"] == "true"
    assert node["metadata"]["annotations"]["kubevirt.io/heartbeat"].endswith("Z")
    Heartbeat(api, NODE).beat(schedulable=False)
    assert api.get(NODES, None, NODE)["metadata"]["labels"]["kubevirt.io/schedulable"] == "false"


class FakeMounter(Mounter):
    """Records what the controller asks of the containerDisk mounter."""

    def __init__(self) -> None:
        super().__init__(
            pods_dir=Path("/nonexistent"), host_pods_dir=Path("/nonexistent"), state_dir=Path("/nonexistent")
        )
        self.is_ready = True
        self.fail: str | None = None
        self.calls: list[str] = []
        self.records: dict[str, str] = {}  # VMI UID -> namespace/name

    def mount(self, vmi: Any, node: str) -> bool:
        if not self.is_ready:
            self.calls.append("not ready")
            return False
        self.calls.append("mount")
        if self.fail:
            raise ContainerDiskError(self.fail)
        self.records[vmi["metadata"]["uid"]] = f"{vmi['metadata']['namespace']}/{vmi['metadata']['name']}"
        return True

    def unmount(self, vmi_uid: str) -> None:
        self.calls.append(f"unmount {vmi_uid}")
        self.records.pop(vmi_uid, None)

    def recorded(self, namespace: str, name: str) -> list[str]:
        return sorted(uid for uid, key in self.records.items() if key == f"{namespace}/{name}")


def _disk_vmi(phase_name: str = "Scheduled", uid: str = "uid-1") -> JSON:
    vmi = _vmi(phase_name)
    vmi["metadata"]["uid"] = uid
    vmi["spec"]["volumes"] = [{"name": "rootdisk", "containerDisk": {"image": "guest"}}]
    return vmi


def _with_mounter(harness: Harness, pods_dir: Path) -> FakeMounter:
    mounter = FakeMounter()
    harness.controller = VMController(
        api=harness.api,
        events=harness.events,
        vmi_store=harness.store,
        node=NODE,
        pods_dir=pods_dir,
        connect=lambda _path: harness.launcher,
        mounter=mounter,
    )
    return mounter


def test_the_disks_are_mounted_before_the_first_sync_once_their_containers_are_up(pods_dir: Path) -> None:
    harness = Harness(pods_dir, _disk_vmi())
    mounter = _with_mounter(harness, pods_dir)
    mounter.is_ready = False
    assert harness.reconcile()["status"]["phase"] == "Scheduled"
    assert (mounter.calls, harness.launcher.calls) == (["not ready"], [])

    mounter.is_ready = True
    vmi = harness.start()
    assert mounter.calls == ["not ready", "mount"]
    assert harness.launcher.calls == ["SyncVirtualMachine"]
    assert vmi["status"]["phase"] == "Running"
    assert vmi["status"]["machine"] == {"type": "pc-q35-7.2"}


def test_a_disk_that_cannot_be_mounted_is_a_sync_failure_and_nothing_starts(pods_dir: Path) -> None:
    harness = Harness(pods_dir, _disk_vmi())
    mounter = _with_mounter(harness, pods_dir)
    mounter.fail = "failed to mount containerDisk rootdisk: /escape: No such file or directory"
    vmi = harness.reconcile()
    assert harness.launcher.calls == []
    assert vmi["status"]["phase"] == "Scheduled"
    (condition,) = [c for c in vmi["status"]["conditions"] if c["type"] == "Synchronized"]
    assert (condition["type"], condition["status"], condition["reason"]) == (
        "Synchronized",
        "False",
        SYNC_FAILED_REASON,
    )
    assert condition["message"] == mounter.fail


def test_a_final_vmi_and_a_deleted_one_have_their_disks_unmounted(pods_dir: Path) -> None:
    harness = Harness(pods_dir, _disk_vmi("Failed"))
    mounter = _with_mounter(harness, pods_dir)
    uid = harness.store.get_by_key("default/tiny")["metadata"]["uid"]  # type: ignore[index]
    mounter.records = {uid: "default/tiny", "uid-0": "default/tiny", "uid-9": "other/vm"}
    harness.reconcile()
    # The VMI's own mounts, and those of an earlier VMI of the same name.
    assert sorted(mounter.calls) == sorted([f"unmount {uid}", "unmount uid-0"])

    mounter.records[uid] = "default/tiny"
    mounter.calls.clear()
    harness.store.remove("default/tiny")
    with contextlib.suppress(RequeueAfter):
        harness.controller.reconcile("default/tiny")
    assert mounter.calls == [f"unmount {uid}"]
    assert mounter.records == {"uid-9": "other/vm"}


# -- the network hook: phase 1 before the sync, its refusals, the pod IP in status --------------------


class FakeNetwork:
    def __init__(self, failure: NetworkSetupError | None = None) -> None:
        self.failure = failure
        self.setups: list[Path] = []
        self.forgotten: list[str] = []

    def setup(self, vmi: JSON, launcher_socket: Path) -> None:
        self.setups.append(launcher_socket)
        if self.failure is not None:
            raise self.failure

    def interface_status(self, vmi: JSON, interfaces: list[JSON]) -> list[JSON]:
        return interfaces

    def forget(self, uid: str) -> None:
        self.forgotten.append(uid)

    def forget_all_but(self, uids: list[str]) -> None:
        self.forgotten.append(f"all but {sorted(uids)}")


def test_phase_one_runs_before_the_sync(pods_dir: Path) -> None:
    network = FakeNetwork()
    harness = Harness(pods_dir, _vmi(), network)
    harness.reconcile()
    assert network.setups == [pods_dir / POD_UID / "volumes/kubernetes.io~empty-dir/sockets/launcher-sock"]
    assert harness.launcher.calls == ["SyncVirtualMachine"]


def test_a_refused_network_is_reported_and_nothing_starts(pods_dir: Path) -> None:
    message = "spec.domain.devices.interfaces[0].ports[1].port: port 80/TCP conflicts with ...ports[0]"
    network = FakeNetwork(NetworkSetupError(CONFIG_INVALID_REASON, message))
    harness = Harness(pods_dir, _vmi(), network)
    vmi = harness.reconcile()
    assert harness.launcher.calls == []  # no domain for a VMI whose network could not be set up
    assert vmi["status"]["phase"] == "Scheduled"
    (condition,) = [c for c in vmi["status"]["conditions"] if c["type"] == "Synchronized"]
    assert (condition["type"], condition["status"], condition["message"]) == (
        "Synchronized",
        "False",
        message,
    )
    assert ("Warning", CONFIG_INVALID_REASON, message) in harness.events.seen


def test_final_and_vanished_vmis_are_forgotten(pods_dir: Path) -> None:
    network = FakeNetwork()
    harness = Harness(pods_dir, _vmi("Failed"), network)
    uid = harness.store.list()[0]["metadata"]["uid"]
    harness.reconcile()
    assert network.forgotten == [uid]
    harness.store.remove("default/tiny")
    harness.controller.reconcile("default/tiny")
    assert network.forgotten[-1] == "all but []"


def test_status_interfaces_carry_the_pod_ips(pods_dir: Path, tmp_path: Path) -> None:
    network = HandlerNetwork(private_dir=tmp_path / "private")
    harness = Harness(pods_dir, _vmi(), network)
    uid = harness.store.list()[0]["metadata"]["uid"]
    recorded = PodIfaceCache(iface={"name": "default"}, pod_ip="10.244.0.7", pod_ips=("10.244.0.7",))
    network._setup.cache.write(uid, "default", recorded)  # what phase 1 recorded
    status = harness.start()["status"]
    assert status["interfaces"] == [
        {
            "name": "default",
            "mac": "52:54:00:00:00:01",
            "infoSource": "domain",
            "queueCount": 1,
            "linkState": "up",
            "ipAddress": "10.244.0.7",
            "ipAddresses": ["10.244.0.7"],
            "podInterfaceName": "eth0",
        }
    ]
    network.forget_all_but([])
    assert network._setup.cache.read(uid, "default") is None


class FakePipes:
    def __init__(self) -> None:
        self.running: dict[str, Path] = {}

    def ensure(self, uid: str, launcher_socket: Path) -> None:
        self.running[uid] = launcher_socket

    def stop(self, uid: str) -> None:
        self.running.pop(uid)


def test_a_found_launcher_gets_its_notify_pipe_and_the_read_domain_resyncs_the_cache(pods_dir: Path) -> None:
    pipes, cache = FakePipes(), DomainCache()
    harness = Harness(pods_dir, _vmi(), notify=DomainNotify(cache, pipes))
    uid = harness.store.list()[0]["metadata"]["uid"]
    harness.start()
    assert pipes.running == {uid: harness.connected[0]}
    assert (cache.get("default/tiny") or {})["Status"]["Status"] == "Running"
    harness.store.remove("default/tiny")
    harness.controller.reconcile("default/tiny")
    assert pipes.running == {}
    assert cache.get("default/tiny") is None
