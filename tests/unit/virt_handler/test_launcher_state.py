"""What virt-handler tells diagnose about a launcher: socket, domain, and the last domain change seen."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kubevirt.virt_handler.domain_events import DomainEventLog
from kubevirt.virt_handler.launcher_sockets import mark_unresponsive
from kubevirt.virt_handler.rest.launcher_state import LauncherStateReader
from kubevirt.virt_handler.rest.lifecycle import LauncherLocator, RouteError
from kubevirt_testing.launcher_socket import launcher_socket

JSON = dict[str, Any]
NODE = "node01"
POD_UID = "pod-1"
STAMPS = iter(f"2026-01-01T00:00:0{n}Z" for n in range(10))


def _domain(state: str, reason: str) -> JSON:
    return {"Status": {"Status": state, "Reason": reason}}


class Launcher:
    def __init__(self, domain: JSON | None) -> None:
        self.domain = domain
        self.closed = False

    def get_domain(self) -> JSON | None:
        return self.domain

    def close(self) -> None:
        self.closed = True


class Store:
    def __init__(self, vmi: JSON) -> None:
        self.vmi = vmi

    def get_by_key(self, key: str) -> JSON | None:
        return self.vmi if key == "default/tiny" else None


@pytest.fixture
def pods_dir(tmp_path: Path) -> Iterator[Path]:
    with launcher_socket(tmp_path, POD_UID, listening=False):
        yield tmp_path


def _reader(pods_dir: Path, launcher: Launcher, log: DomainEventLog) -> LauncherStateReader:
    vmi = {
        "metadata": {"name": "tiny", "namespace": "default", "uid": "u1"},
        "status": {"activePods": {POD_UID: NODE}},
    }
    return LauncherStateReader(Store(vmi), LauncherLocator(pods_dir, NODE, connect=lambda _p: launcher), log)


def test_domain_changes_become_events_and_repeats_do_not() -> None:
    log = DomainEventLog(now=lambda: next(STAMPS))
    assert log.last("u1") is None
    log.observe("u1", None)
    assert log.last("u1") is None
    log.observe("u1", _domain("Running", "Booted"))
    first = log.last("u1")
    assert first is not None
    assert (first.type, first.status, first.reason) == ("Added", "Running", "Booted")
    log.observe("u1", _domain("Running", "Booted"))
    assert log.last("u1") == first  # no change, no new event
    log.observe("u1", _domain("Paused", "User"))
    paused = log.last("u1")
    assert paused is not None
    assert (paused.type, paused.status, paused.reason) == ("Modified", "Paused", "User")
    log.observe("u1", None)
    gone = log.last("u1")
    assert gone is not None
    assert (gone.type, gone.status) == ("Deleted", "Paused")
    log.forget("u1")
    assert log.last("u1") is None


def test_a_ready_launcher_reports_its_domain_and_the_last_event(pods_dir: Path) -> None:
    log = DomainEventLog(now=lambda: "2026-01-01T00:00:00Z")
    log.observe("u1", _domain("Running", "Unpaused"))
    launcher = Launcher(_domain("Running", "Unpaused"))
    answer = _reader(pods_dir, launcher, log).read("default", "tiny")
    assert answer == {
        "socket": {"state": "Ready", "message": ""},
        "domain": {"exists": True, "status": "Running", "reason": "Unpaused"},
        "lastDomainEvent": {
            "type": "Added",
            "status": "Running",
            "reason": "Unpaused",
            "timestamp": "2026-01-01T00:00:00Z",
        },
    }
    assert launcher.closed


def test_no_domain_yet(pods_dir: Path) -> None:
    answer = _reader(pods_dir, Launcher(None), DomainEventLog()).read("default", "tiny")
    assert answer["domain"] == {"exists": False}


def test_an_unresponsive_launcher_is_not_called(pods_dir: Path) -> None:
    mark_unresponsive(pods_dir, POD_UID)
    launcher = Launcher(_domain("Running", "Booted"))
    answer = _reader(pods_dir, launcher, DomainEventLog()).read("default", "tiny")
    assert answer["socket"]["state"] == "Unresponsive"
    assert answer["domain"] is None
    assert not launcher.closed  # never connected


def test_a_missing_socket_and_an_unknown_vmi(pods_dir: Path) -> None:
    (pods_dir / POD_UID / "volumes" / "kubernetes.io~empty-dir" / "sockets" / "launcher-sock").unlink()
    reader = _reader(pods_dir, Launcher(None), DomainEventLog())
    answer = reader.read("default", "tiny")
    assert answer["socket"]["state"] == "Missing"
    assert answer["socket"]["message"]
    with pytest.raises(RouteError) as caught:
        reader.read("default", "other")
    assert caught.value.code == 404
