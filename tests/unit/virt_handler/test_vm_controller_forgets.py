"""virt-handler's VM controller keeps nothing for VMIs that left the node without a final phase seen here:
migrated away, deleted (its last domain seen down), deleted while its launcher was still awaited, or
deleted and created again under the same name while the handler was not watching."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kubevirt.client import VIRTUAL_MACHINE_INSTANCES
from kubevirt.controller import RequeueAfter, Store
from kubevirt.virt_handler.domain_events import DomainEventLog
from kubevirt.virt_handler.vm_controller import VMController
from kubevirt_testing.fake_kube_api import FakeKubeApi
from kubevirt_testing.launcher_socket import launcher_socket

NODE, OTHER_NODE = "node01", "node02"
POD_UID = "pod-1"
KEY = "default/tiny"
JSON = dict[str, Any]


def _domain(state: str, reason: str) -> JSON:
    return {"Spec": {"Features": {"ACPI": {}}}, "Status": {"Status": state, "Reason": reason}}


class FakeLauncher:
    def __init__(self) -> None:
        self.domain: JSON | None = None

    def sync_vmi(self, vmi: JSON, options: Any = None) -> None:
        if self.domain is None:
            self.domain = _domain("Running", "Booted")

    def vmi_command(self, command: str, vmi: JSON) -> None:
        if command == "DeleteVirtualMachine":
            self.domain = None

    def get_domain(self) -> JSON | None:
        return self.domain

    def close(self) -> None:
        pass


class Events:
    def event(self, obj: Any, event_type: str, reason: str, message: str) -> None:
        pass


def _vmi(phase: str = "Running", node: str = NODE) -> JSON:
    return {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachineInstance",
        "metadata": {"name": "tiny", "namespace": "default", "labels": {"kubevirt.io/nodeName": node}},
        "spec": {"domain": {}, "terminationGracePeriodSeconds": 30},
        "status": {"phase": phase, "nodeName": node, "activePods": {POD_UID: NODE}},
    }


@pytest.fixture
def pods_dir(tmp_path: Path) -> Iterator[Path]:
    with launcher_socket(tmp_path, POD_UID, listening=False):
        yield tmp_path


class Harness:
    def __init__(self, pods_dir: Path, vmi: JSON) -> None:
        self.api = FakeKubeApi()
        self.store: Store[JSON] = Store()
        self.launcher = FakeLauncher()
        if vmi["status"]["phase"] == "Running":
            self.launcher.domain = _domain("Running", "Booted")  # a Running VMI's guest is up
        self.log = DomainEventLog()
        self.vmi = self.api.add(VIRTUAL_MACHINE_INSTANCES, vmi)
        self.uid = str(self.vmi["metadata"]["uid"])
        self.store.upsert(self.vmi)
        self.controller = VMController(
            api=self.api,
            events=Events(),
            vmi_store=self.store,
            node=NODE,
            pods_dir=pods_dir,
            connect=lambda _path: self.launcher,
            domain_events=self.log,
        )

    def reconcile(self, key: str = KEY) -> None:
        with contextlib.suppress(RequeueAfter):
            self.controller.reconcile(key)

    def kept(self) -> JSON:
        """Everything the controller and its domain-event log hold per VMI, that holds anything."""
        c = self.controller
        tables = {
            "waiting_since": dict(c._waiting_since),
            "reached": set(c._reached),
            "last_down": dict(c._last_down),
            "replaced": dict(c._replaced),
            "uids": dict(getattr(c, "_uids", {})),
            "domain states": dict(self.log._state),
            "domain events": dict(self.log._last),
        }
        return {name: table for name, table in tables.items() if table}


def test_a_vmi_that_migrated_away_is_forgotten_when_it_is_relabelled(pods_dir: Path) -> None:
    harness = Harness(pods_dir, _vmi())
    harness.reconcile()
    assert harness.uid in harness.kept()["reached"]
    assert harness.log.last(harness.uid) is not None
    # The migration finished: the target's handler moved the VMI to its node, still Running.
    moved = harness.api.patch(
        VIRTUAL_MACHINE_INSTANCES,
        "default",
        "tiny",
        {"metadata": {"labels": {"kubevirt.io/nodeName": OTHER_NODE}}, "status": {"nodeName": OTHER_NODE}},
        patch_type="merge",
    )
    harness.store.upsert(moved)
    harness.reconcile()
    assert harness.kept() == {}
    assert harness.log.last(harness.uid) is None


def test_a_vmi_that_migrated_away_is_forgotten_when_the_node_cache_drops_it(pods_dir: Path) -> None:
    harness = Harness(pods_dir, _vmi())
    harness.reconcile()
    assert harness.kept()
    # The node's informer selects by the nodeName label: relabelled to the target, it is a deletion here.
    harness.store.remove(KEY)
    harness.reconcile()
    assert harness.kept() == {}


def test_a_deleted_vmi_whose_domain_was_last_seen_down_is_forgotten(pods_dir: Path) -> None:
    harness = Harness(pods_dir, _vmi())
    harness.reconcile()
    # The guest powered off as the VMI was deleted: the status write finds it gone, so no final phase.
    harness.launcher.domain = _domain("Shutoff", "Shutdown")
    harness.api.delete(VIRTUAL_MACHINE_INSTANCES, "default", "tiny")
    harness.reconcile()
    assert harness.uid in harness.kept()["last_down"]
    harness.store.remove(KEY)
    harness.reconcile()
    assert harness.kept() == {}


def test_a_vmi_deleted_while_its_launcher_was_awaited_is_forgotten(tmp_path: Path) -> None:
    (tmp_path / POD_UID).mkdir()  # its pod is there, its launcher's socket not yet
    harness = Harness(tmp_path, _vmi("Scheduled"))
    harness.reconcile()
    assert harness.uid in harness.kept()["waiting_since"]
    harness.store.remove(KEY)
    harness.reconcile()
    assert harness.kept() == {}


def test_a_vmi_recreated_under_its_name_while_the_handler_was_not_watching(pods_dir: Path) -> None:
    harness = Harness(pods_dir, _vmi())
    harness.reconcile()
    old_uid = harness.uid
    # The relist after the watch came back shows the name with a new VMI: an update, no deletion.
    harness.api.delete(VIRTUAL_MACHINE_INSTANCES, "default", "tiny")
    new = harness.api.add(VIRTUAL_MACHINE_INSTANCES, _vmi())
    harness.store.replace([new])
    harness.reconcile()
    kept = harness.kept()
    assert old_uid not in kept["reached"]
    assert harness.log.last(old_uid) is None
    assert new["metadata"]["uid"] in kept["reached"]


def test_any_departure_sweeps_vmis_the_cache_no_longer_holds(pods_dir: Path) -> None:
    harness = Harness(pods_dir, _vmi())
    harness.reconcile()
    # Gone while the handler was not watching, and its own key not reconciled since: the next key
    # found gone (at start-up, one a mount record names) takes its leftovers along.
    harness.store.replace([])
    harness.reconcile("default/long-gone")
    assert harness.kept() == {}


def test_the_domain_event_log_keeps_only_the_vmis_it_is_told() -> None:
    log = DomainEventLog(now=lambda: "2026-01-01T00:00:00Z")
    log.observe("u1", _domain("Running", "Booted"))
    log.observe("u2", _domain("Running", "Booted"))
    log.observe("u3", None)
    log.forget_all_but(["u2"])
    assert log.last("u1") is None
    assert log.last("u2") is not None
    assert set(log._state) == {"u2"}
