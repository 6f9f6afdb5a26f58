"""virt-handler's VM controller keeps one launcher client per VMI, reads the domain once per reconcile and
sends SyncVirtualMachine its options: dials and calls counted against a fake launcher over real sockets."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kubevirt.client import VIRTUAL_MACHINE_INSTANCES
from kubevirt.controller import RequeueAfter, Store
from kubevirt.handler_launcher_com.cmd.client import LauncherDisconnectedError
from kubevirt.handler_launcher_com.cmd.v1 import cmd_pb2
from kubevirt.virt_config import ClusterConfig
from kubevirt.virt_handler.vm_controller import VMController
from kubevirt_testing.fake_kube_api import FakeKubeApi
from kubevirt_testing.launcher_socket import launcher_socket, sockets_dir

NODE = "node01"
POD_UID, NEW_POD_UID = "pod-1", "pod-2"
KEY = "default/tiny"
JSON = dict[str, Any]


def _domain(state: str = "Running", reason: str = "Booted") -> JSON:
    return {"Spec": {"Features": {"ACPI": {}}}, "Status": {"Status": state, "Reason": reason}}


class Launcher:
    """One dialled client: counts its calls, fails them once its launcher is gone. Like the real one it
    holds the socket it dialled open, so a socket made again in its place is another inode."""

    def __init__(self, node: Node, socket: Path) -> None:
        self.node = node
        self.socket = socket
        self.closed = False
        self._fd: int | None = os.open(socket, os.O_PATH | os.O_NOFOLLOW)
        self.options: list[cmd_pb2.VirtualMachineOptions | None] = []

    def _call(self, name: str) -> None:
        assert not self.closed, "a closed client was used"
        self.node.calls.append(name)
        if self.node.dead:
            raise LauncherDisconnectedError(name)

    def get_domain(self) -> JSON | None:
        self._call("GetDomain")
        return self.node.domain

    def sync_vmi(self, vmi: JSON, options: cmd_pb2.VirtualMachineOptions | None = None) -> None:
        self._call("SyncVirtualMachine")
        self.options.append(options)
        if self.node.domain is None:
            self.node.domain = _domain()

    def vmi_command(self, command: str, vmi: JSON) -> None:
        self._call(command)

    def close(self) -> None:
        self.closed = True
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


class Node:
    """The launcher side: its domain, whether it answers, and every dial and call made to it."""

    def __init__(self) -> None:
        self.domain: JSON | None = None
        self.dead = False
        self.calls: list[str] = []
        self.dials: list[Launcher] = []

    def connect(self, socket: Path) -> Launcher:
        client = Launcher(self, socket)
        self.dials.append(client)
        return client


def _vmi(phase: str = "Scheduled", pod: str = POD_UID) -> JSON:
    return {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachineInstance",
        "metadata": {"name": "tiny", "namespace": "default", "labels": {"kubevirt.io/nodeName": NODE}},
        "spec": {
            "domain": {"devices": {"interfaces": [{"name": "default", "masquerade": {}}]}},
            "networks": [{"name": "default", "pod": {}}],
            "terminationGracePeriodSeconds": 30,
        },
        "status": {"phase": phase, "nodeName": NODE, "activePods": {pod: NODE}},
    }


@pytest.fixture
def pods_dir(tmp_path: Path) -> Iterator[Path]:
    with launcher_socket(tmp_path, POD_UID, listening=False):
        yield tmp_path


class Harness:
    def __init__(self, pods_dir: Path, vmi: JSON, config: ClusterConfig | None = None) -> None:
        self.api = FakeKubeApi()
        self.store: Store[JSON] = Store()
        self.node = Node()
        self.store.upsert(self.api.add(VIRTUAL_MACHINE_INSTANCES, vmi))
        self.controller = VMController(
            api=self.api,
            events=_Events(),
            vmi_store=self.store,
            node=NODE,
            pods_dir=pods_dir,
            connect=self.node.connect,
            config=lambda: config or ClusterConfig(),
        )

    def reconcile(self) -> JSON:
        with contextlib.suppress(RequeueAfter):
            self.controller.reconcile(KEY)
        current = self.api.get(VIRTUAL_MACHINE_INSTANCES, "default", "tiny")
        self.store.upsert(current)
        return current


class _Events:
    def event(self, obj: Any, event_type: str, reason: str, message: str) -> None:
        pass


def test_two_reconciles_dial_once_and_read_the_domain_once_each(pods_dir: Path) -> None:
    harness = Harness(pods_dir, _vmi())
    harness.reconcile()  # defines and starts the guest
    assert harness.node.calls == ["GetDomain", "SyncVirtualMachine"]
    vmi = harness.reconcile()  # what the domain event queues: the status catches up
    assert vmi["status"]["phase"] == "Running"
    assert harness.node.calls == ["GetDomain", "SyncVirtualMachine", "GetDomain"]
    harness.reconcile()  # a resync of the running VMI
    assert harness.node.calls[3:] == ["GetDomain", "SyncVirtualMachine"]
    assert len(harness.node.dials) == 1
    assert not harness.node.dials[0].closed


def test_a_dead_channel_is_dropped_and_dialled_again(pods_dir: Path) -> None:
    harness = Harness(pods_dir, _vmi("Running"))
    harness.node.domain = _domain()
    harness.reconcile()
    harness.node.dead = True
    harness.reconcile()
    first = harness.node.dials[0]
    assert first.closed  # a failed call leaves no channel to wait on
    harness.node.dead = False
    vmi = harness.reconcile()
    assert len(harness.node.dials) == 2
    assert not harness.node.dials[1].closed
    assert vmi["status"]["phase"] == "Running"  # the watchdog, not a disconnection, fails a VMI


def test_a_new_launcher_pod_gets_a_new_checked_dial(pods_dir: Path) -> None:
    harness = Harness(pods_dir, _vmi("Running"))
    harness.node.domain = _domain()
    harness.reconcile()
    with launcher_socket(pods_dir, NEW_POD_UID, listening=False):
        # The same VMI now served by another pod (its old one gone from activePods).
        vmi = harness.api.get(VIRTUAL_MACHINE_INSTANCES, "default", "tiny")
        vmi["status"]["activePods"] = {NEW_POD_UID: NODE}
        harness.store.upsert(harness.api.update(VIRTUAL_MACHINE_INSTANCES, "default", vmi))
        harness.reconcile()
    old, new = harness.node.dials
    assert old.closed
    assert old.socket.is_relative_to(pods_dir / POD_UID)
    assert new.socket.is_relative_to(pods_dir / NEW_POD_UID)


def test_a_launcher_started_again_in_its_pod_gets_a_new_dial(pods_dir: Path) -> None:
    harness = Harness(pods_dir, _vmi("Running"))
    harness.node.domain = _domain()
    harness.reconcile()
    (sockets_dir(pods_dir, POD_UID) / "launcher-sock").unlink()
    with launcher_socket(pods_dir, POD_UID, listening=False):  # the same path, a new socket
        harness.reconcile()
    assert len(harness.node.dials) == 2
    assert harness.node.dials[0].closed


def test_a_link_in_the_sockets_place_is_not_dialled_and_drops_the_kept_client(
    pods_dir: Path, tmp_path: Path
) -> None:
    harness = Harness(pods_dir, _vmi("Running"))
    harness.node.domain = _domain()
    harness.reconcile()
    socket = sockets_dir(pods_dir, POD_UID) / "launcher-sock"
    with launcher_socket(tmp_path / "elsewhere", "x", listening=False) as other:
        socket.unlink()
        os.symlink(other, socket)
        harness.reconcile()
    assert len(harness.node.dials) == 1
    assert harness.node.dials[0].closed


def test_a_vmi_forgotten_closes_its_client(pods_dir: Path) -> None:
    harness = Harness(pods_dir, _vmi("Running"))
    harness.node.domain = _domain()
    harness.reconcile()
    harness.store.remove(KEY)
    harness.controller.reconcile(KEY)
    assert harness.node.dials[0].closed


def test_a_launcher_refusing_a_command_keeps_its_channel(pods_dir: Path) -> None:
    from kubevirt.handler_launcher_com.cmd.client import CommandFailedError

    harness = Harness(pods_dir, _vmi())

    def refuse(vmi: JSON, options: Any = None) -> None:
        raise CommandFailedError("SyncVirtualMachine", "no such disk")

    harness.reconcile()
    client = harness.node.dials[0]
    client.sync_vmi = refuse  # type: ignore[method-assign]
    harness.node.domain = None
    harness.reconcile()
    assert not client.closed
    assert len(harness.node.dials) == 1


def test_sync_carries_the_cluster_options(pods_dir: Path) -> None:
    kubevirt = {
        "metadata": {"annotations": {"kubevirt.io/vga-display-efi-x86": ""}},
        "spec": {
            "configuration": {
                "smbios": {"manufacturer": "Acme", "version": "7"},
                "memBalloonStatsPeriod": 3,
                "virtualMachineOptions": {"disableFreePageReporting": {}, "disableSerialConsoleLog": {}},
                "developerConfiguration": {"featureGates": ["ExpandDisks"]},
            }
        },
    }
    vmi = _vmi()
    vmi["status"]["volumeStatus"] = [
        {"name": "pre", "persistentVolumeClaimInfo": {"preallocated": True}},
        {"name": "thin", "persistentVolumeClaimInfo": {"preallocated": False}},
    ]
    harness = Harness(pods_dir, vmi, ClusterConfig.from_kubevirt(kubevirt))
    harness.reconcile()
    (options,) = harness.node.dials[0].options
    assert options is not None
    assert (options.VirtualMachineSMBios.manufacturer, options.VirtualMachineSMBios.family) == (
        "Acme",
        "KubeVirt",
    )
    assert (options.VirtualMachineSMBios.product, options.VirtualMachineSMBios.version) == ("None", "7")
    assert options.MemBalloonStatsPeriod == 3
    assert list(options.PreallocatedVolumes) == ["pre"]
    assert options.ExpandDisksEnabled
    config = options.clusterConfig
    assert config.ExpandDisksEnabled
    assert config.FreePageReportingDisabled
    assert config.SerialConsoleLogDisabled
    assert not config.BochsDisplayForEFIGuests
    assert dict(options.interfaceDomainAttachment) == {"default": "tap"}
    assert not options.DisksInfo  # the launcher reads its images itself
