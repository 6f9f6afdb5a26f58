"""The small programs of the launcher pod: virt-launcher-monitor and virt-tail (container-disk, a C program,
has its own test among the integration tests)."""

from __future__ import annotations

import io
import subprocess
import sys
import threading
import time
from pathlib import Path

from kubevirt.virt_launcher import console_tail, monitor


def test_monitor_drops_keep_after_failure_and_remembers_it() -> None:
    args, keep = monitor.launcher_arguments(["--name", "a", "--keep-after-failure", "--uid", "u"])
    assert (args, keep) == (["--name", "a", "--uid", "u"], True)
    assert monitor.launcher_arguments(["--name", "a"]) == (["--name", "a"], False)


def test_monitor_returns_the_launchers_exit_code(tmp_path: Path) -> None:
    launcher = tmp_path / "launcher"
    launcher.write_text(f"#!{sys.executable}\nimport sys\nsys.exit(len(sys.argv) + 3)\n")
    launcher.chmod(0o755)
    # Two arguments after the program name: exit code 3 + 3.
    assert monitor.run(["a", "b"], str(launcher)) == 6


def test_monitor_loads_logging_only_when_it_logs(tmp_path: Path) -> None:
    launcher = tmp_path / "launcher"
    launcher.write_text("#!/bin/sh\nexit 0\n")
    launcher.chmod(0o755)
    lines: list[tuple[str, dict[str, object]]] = []

    class Log:
        def info(self, message: str, **fields: object) -> None:
            lines.append((message, fields))

    made: list[Log] = []

    def logger() -> Log:
        made.append(Log())
        return made[-1]

    assert monitor.run([], str(launcher), logger=logger) == 0
    assert len(made) == 1
    assert lines == [("virt-launcher exited", {"exit_code": 0})]
    # The monitor's own start imports no logging library (the launcher starts sooner under the CPU limit).
    code = (
        "import sys; import kubevirt_cmd.virt_launcher_monitor, kubevirt.virt_launcher.monitor; "
        "sys.exit(sorted(m for m in sys.modules if m in ('structlog', 'kubevirt.log')) or 0)"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_monitor_empties_the_container_disk_directory_once_the_launcher_ended(tmp_path: Path) -> None:
    launcher = tmp_path / "launcher"
    launcher.write_text(f"#!{sys.executable}\n")
    launcher.chmod(0o755)
    disks = tmp_path / "container-disks"
    (disks / "hotplug").mkdir(parents=True)
    (disks / "disk_0.sock").write_bytes(b"")
    assert monitor.run(["--uid", "u", "--container-disk-dir", str(disks)], str(launcher)) == 0
    assert disks.is_dir()
    assert not list(disks.iterdir())
    assert monitor.container_disk_dir(["--container-disk-dir=/x"]) == Path("/x")
    assert monitor.container_disk_dir(["--uid", "u"]) is None


def test_stop_qemu_reports_a_process_that_will_not_go() -> None:
    assert monitor.stop_qemu(timeout=0.3, find=lambda: [2**22 + 7]) is False
    assert monitor.stop_qemu(timeout=0.3, find=list) is True


def test_tail_waits_for_the_file_and_follows_appends(tmp_path: Path) -> None:
    log = tmp_path / "virt-serial0-log"
    out = io.BytesIO()
    stop = threading.Event()
    follower = threading.Thread(target=console_tail.follow, args=(log, out, stop, 0.01))
    follower.start()
    time.sleep(0.05)
    log.write_bytes(b"boot\n")
    with log.open("ab") as more:
        more.write(b"MARKER\n")
    deadline = time.monotonic() + 5
    while b"MARKER" not in out.getvalue() and time.monotonic() < deadline:
        time.sleep(0.01)
    stop.set()
    follower.join(5)
    assert out.getvalue() == b"boot\nMARKER\n"


def test_mount_namespaces_need_cap_sys_admin(tmp_path: Path) -> None:
    from kubevirt.virt_launcher.libvirtd import can_unshare_mounts

    status = tmp_path / "status"
    status.write_text("Name:\tx\nCapEff:\t000001ffffffffff\n")
    assert can_unshare_mounts(status) is True
    # The container runtime's default set: no CAP_SYS_ADMIN (bit 21).
    status.write_text("Name:\tx\nCapEff:\t00000000a80425fb\n")
    assert can_unshare_mounts(status) is False
