"""A further node's init process for real (unshare, mount propagation, PID 1 of its own namespace), on
scratch directories: what it binds is seen only inside, processes entering it see it as PID 1 and its
mounts, shared targets propagate mounts made inside, and stopping it ends everything in it."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "hack" / "cluster"))

from localcluster import processes  # noqa: E402
from localcluster.layout import REPO as LAYOUT_REPO  # noqa: E402

assert LAYOUT_REPO == REPO


@pytest.fixture
def node_init(tmp_path: Path) -> Iterator[tuple[processes.Record, Path, Path]]:
    private, target, ready = tmp_path / "private", tmp_path / "target", tmp_path / "ready"
    target.mkdir()
    (target / "host-file").write_text("host")
    # Something the host mounted below the target before the node started (as node 1 mounts below
    # /var/lib/kubelet and /run/kubevirt).
    (target / "host-mount").mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "host-mount", str(target / "host-mount")], check=True)
    spec = {"mounts": [[str(private), str(target), True]], "ready": str(ready)}
    argv = [
        "unshare", "--pid", "--mount", "--net", "--fork", "--kill-child=SIGKILL", "--propagation=slave",
        "--mount-proc", sys.executable, "-m", "localcluster.nodeinit", json.dumps(spec),
    ]  # fmt: skip
    env = {"PYTHONPATH": str(REPO / "hack" / "cluster"), "PATH": "/usr/sbin:/usr/bin:/sbin:/bin"}
    record = processes.start("init", argv, pid_dir=tmp_path / "pids", log_dir=tmp_path, forks=True, env=env)
    deadline = time.monotonic() + 20
    while not ready.exists():
        assert processes.alive(record), (tmp_path / "init.log").read_text()
        assert time.monotonic() < deadline
        time.sleep(0.02)
    try:
        yield record, private, target
    finally:
        processes.stop(record)
        subprocess.run(["umount", str(target / "host-mount")], check=False)


def _inside(record: processes.Record, script: str) -> str:
    enter = ["nsenter", f"--target={record.pid}", "--mount", "--net", "--pid", "--"]
    result = subprocess.run(
        [*enter, "sh", "-c", script], capture_output=True, text=True, timeout=30, check=True
    )
    return result.stdout


def test_the_private_copy_is_seen_inside_only(node_init: tuple[processes.Record, Path, Path]) -> None:
    record, private, target = node_init
    assert _inside(record, f"ls {target}") == ""  # neither the host's files nor its mount below
    _inside(record, f"echo node > {target}/node-file")
    assert (private / "node-file").read_text() == "node\n"
    assert sorted(p.name for p in target.iterdir()) == ["host-file", "host-mount"]


def test_only_the_private_mount_is_listed_at_the_target_and_it_is_shared(
    node_init: tuple[processes.Record, Path, Path],
) -> None:
    record, _private, target = node_init
    listed = _inside(record, "cat /proc/self/mountinfo").splitlines()
    at_or_below = [line.split() for line in listed if line.split()[4].startswith(str(target))]
    assert [fields[4] for fields in at_or_below] == [str(target)], at_or_below
    assert any(field.startswith("shared:") for field in at_or_below[0][6:]), at_or_below


def test_the_nodes_root_is_shared_as_a_real_nodes_and_what_it_mounts_stays_inside(
    node_init: tuple[processes.Record, Path, Path], tmp_path: Path
) -> None:
    """The container runtime accepts a Bidirectional host path only on a shared mount, found without
    resolving links (``/var/run/kubevirt`` is on ``/``); the host must still not see the node's mounts."""
    record, _private, target = node_init
    [root] = [
        line.split()
        for line in _inside(record, "cat /proc/self/mountinfo").splitlines()
        if line.split()[4] == "/"
    ]
    optional = root[6 : root.index("-")]
    assert any(tag.startswith("shared:") for tag in optional), root
    # The shared targets are peer groups of their own: what is mounted below them shows once.
    listed = _inside(record, "cat /proc/self/mountinfo").splitlines()
    [bound] = [line.split() for line in listed if line.split()[4] == str(target)]
    bound_groups = {tag for tag in bound[6 : bound.index("-")] if tag.startswith("shared:")}
    assert bound_groups
    assert not bound_groups & set(optional), (root, bound)
    probe = tmp_path / "root-probe"
    probe.mkdir()
    _inside(record, f"mount -t tmpfs probe {probe} && touch {probe}/inside")
    assert list(probe.iterdir()) == []


def test_entered_processes_see_the_init_as_pid_1_and_no_host_network(
    node_init: tuple[processes.Record, Path, Path],
) -> None:
    record, _private, _target = node_init
    assert _inside(record, "cat /proc/1/cmdline | tr '\\0' ' '").find("localcluster.nodeinit") >= 0
    links = _inside(record, "ls /sys/class/net >/dev/null; ip -o link show | cut -d: -f2")
    assert links.split() == ["lo"]


def test_a_mount_made_inside_below_a_shared_target_reaches_other_entered_processes(
    node_init: tuple[processes.Record, Path, Path],
) -> None:
    record, _private, target = node_init
    # Each `unshare --mount` is a fresh mount namespace below the node's, as a container's is: a mount it
    # makes under the shared target propagates back to the node's namespace.
    script = f"mkdir -p {target}/sub && unshare --mount --propagation unchanged mount -t tmpfs t {target}/sub"
    _inside(record, script)
    assert "tmpfs" in _inside(record, f"findmnt -n -o FSTYPE {target}/sub")
    assert subprocess.run(["findmnt", str(target / "sub")], capture_output=True, check=False).returncode != 0


def test_stopping_the_init_ends_everything_inside(
    node_init: tuple[processes.Record, Path, Path], tmp_path: Path
) -> None:
    record, _private, _target = node_init
    enter = ["nsenter", f"--target={record.pid}", "--mount", "--net", "--pid", "--"]
    sleeper = processes.start(
        "sleeper", [*enter, "sleep", "600"], pid_dir=tmp_path / "pids", log_dir=tmp_path, forks=True
    )
    assert processes.alive(sleeper)
    processes.stop(record)
    deadline = time.monotonic() + 10
    while processes.alive(sleeper):
        assert time.monotonic() < deadline, "a process of the node outlived its init"
        time.sleep(0.05)
