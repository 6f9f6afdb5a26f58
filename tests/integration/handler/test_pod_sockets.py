"""Dialling into a pod's volumes with real processes and sockets: only the pod's own process, in namespaces
of its own, is taken for the pod; a link is never followed, whenever it is planted."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from kubevirt.handler_launcher_com.sockets import READY_SOCKET
from kubevirt.virt_handler.launcher_sockets import find_launcher_socket, socket_dir
from kubevirt.virt_handler.pod_sockets import PodSocketError, connect_launcher, launcher_pid, verify_peer
from kubevirt_testing import pod_process

pytestmark = pytest.mark.timeout(60)

SERVE = """
import signal, socket, sys
listener = socket.socket(socket.AF_UNIX)
listener.bind(sys.argv[1])
listener.listen(8)
print("ready", flush=True)
signal.pause()
"""


class Pods:
    """A throwaway pods directory; ``serve`` starts a process serving a socket in a pod's volume."""

    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="p", dir="/tmp"))  # short: socket paths are limited
        self._processes: list[subprocess.Popen[str]] = []
        self._cgroups: set[str] = set()

    def serve(self, path: Path, *, cgroup_of: str, namespaces: bool = True) -> int:
        path.parent.mkdir(parents=True, exist_ok=True)
        argv = [sys.executable, "-c", SERVE, path.name]
        self._cgroups.add(cgroup_of)
        process = subprocess.Popen(
            pod_process.in_pod_namespaces(argv) if namespaces else argv,
            cwd=path.parent,
            stdout=subprocess.PIPE,
            text=True,
            preexec_fn=pod_process.join_cgroup(cgroup_of),
        )
        self._processes.append(process)
        assert process.stdout is not None
        assert process.stdout.readline().strip() == "ready"
        return pod_process.wait_for_child(process.pid) if namespaces else process.pid

    def launcher_socket(self, pod_uid: str) -> Path:
        return self.dir.joinpath(*socket_dir(pod_uid), READY_SOCKET)

    def close(self) -> None:
        for process in self._processes:
            pod_process.kill(process)
        for name in self._cgroups:
            pod_process.remove_cgroup(name)
        shutil.rmtree(self.dir)


@pytest.fixture
def pods() -> Iterator[Pods]:
    created = Pods()
    yield created
    created.close()


def test_the_launcher_of_the_pod_is_found_by_its_socket(pods: Pods) -> None:
    uid = str(uuid.uuid4())
    pid = pods.serve(pods.launcher_socket(uid), cgroup_of=uid)
    found = find_launcher_socket(pods.dir, {uid: "node"}, "node")
    assert launcher_pid(found) == pid


def test_a_launcher_socket_swapped_for_a_link_is_refused(pods: Pods, tmp_path: Path) -> None:
    uid = str(uuid.uuid4())
    socket = pods.launcher_socket(uid)
    pods.serve(socket, cgroup_of=uid)
    found = find_launcher_socket(pods.dir, {uid: "node"}, "node")
    host_socket = tmp_path / "host.sock"
    pods.serve(host_socket, cgroup_of="host-service", namespaces=False)
    os.rename(socket, socket.with_name("moved"))
    socket.symlink_to(host_socket)  # after the lookup, before the use
    with pytest.raises(PodSocketError, match="launcher-sock: refused, a symlink"):
        launcher_pid(found)
    with pytest.raises(PodSocketError, match="launcher-sock: refused, a symlink"):
        connect_launcher(found)


def test_a_link_on_the_way_to_the_socket_is_refused(pods: Pods, tmp_path: Path) -> None:
    uid = str(uuid.uuid4())
    elsewhere = tmp_path / "elsewhere"
    pods.serve(elsewhere / READY_SOCKET, cgroup_of=uid)
    sockets = pods.launcher_socket(uid).parent
    sockets.parent.mkdir(parents=True)
    sockets.symlink_to(elsewhere)  # the volume directory itself is a link
    with pytest.raises(PodSocketError, match="refused, leads out of its root or through a symlink"):
        launcher_pid(pods.launcher_socket(uid))


@pytest.mark.parametrize(
    ("cgroup", "namespaces", "reason"),
    [
        ("other-pod", True, "is not in pod"),
        ("this-pod", False, "pid namespace"),
    ],
)
def test_only_a_process_of_the_pod_in_its_own_namespaces_passes(
    pods: Pods, cgroup: str, namespaces: bool, reason: str
) -> None:
    pid = pods.serve(pods.dir / "s" / "x.sock", cgroup_of=cgroup, namespaces=namespaces)
    with pytest.raises(PodSocketError, match=reason):
        verify_peer(pid, "this-pod")


def test_a_socket_path_outside_the_layout_is_refused(tmp_path: Path) -> None:
    with pytest.raises(PodSocketError, match="not a launcher socket below a pods directory"):
        launcher_pid(tmp_path / "launcher-sock")
