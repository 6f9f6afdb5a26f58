"""The virt-launcher process on libvirt's test driver: readiness, and each way its work ends."""

from __future__ import annotations

import json
import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kubevirt.handler_launcher_com.cmd.client import CommandFailedError, LauncherClient
from kubevirt.handler_launcher_com.sockets import cmd_socket_path, init_socket_path

pytestmark = pytest.mark.timeout(60)

LAUNCHER = shutil.which("virt-launcher") or str(Path(sys.executable).parent / "virt-launcher")
VMI_FILE = (
    Path(__file__).parents[2]
    / "testdata/conformance/vmi/valid/080-kernelboot-kernel-initrd-args.defaults.nohotplug.json"
)


class Process:
    def __init__(
        self, root: Path, *args: str, env: dict[str, str] | None = None, uri: str | None = None
    ) -> None:
        self.vmi: dict[str, Any] = json.loads(VMI_FILE.read_text())
        self.share = root / "share"
        node = root / "node.xml"
        node.write_text("<node/>")
        uri = uri or f"test://{node}"
        self.log = root / "launcher.log"
        metadata = self.vmi["metadata"]
        with self.log.open("wb") as log:
            self.process = subprocess.Popen(
                [
                    LAUNCHER,
                    *(
                        "--name",
                        metadata["name"],
                        "--namespace",
                        metadata["namespace"],
                        "--uid",
                        metadata["uid"],
                    ),
                    *(
                        "--kubevirt-share-dir",
                        str(self.share),
                        "--kubevirt-private-dir",
                        str(root / "private"),
                    ),
                    *("--libvirt-uri", uri, "--force-emulation"),
                    *args,
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                env={**os.environ, **(env or {})},
            )
        deadline = time.monotonic() + 30
        while not cmd_socket_path(self.share).exists():
            assert self.process.poll() is None, self.logs()
            assert time.monotonic() < deadline, self.logs()
            time.sleep(0.05)
        self.client = LauncherClient(cmd_socket_path(self.share))

    def logs(self) -> str:
        return self.log.read_text(errors="replace")

    def exit_reason(self) -> str:
        for line in self.logs().splitlines():
            if line.startswith("{") and json.loads(line).get("msg") == "Exiting...":
                return str(json.loads(line)["reason"])
        return ""

    def stop(self) -> None:
        self.client.close()
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


@pytest.fixture
def start(tmp_path: Path) -> Iterator[Any]:
    started: list[Process] = []

    def run(*args: str, env: dict[str, str] | None = None, uri: str | None = None) -> Process:
        directory = tmp_path / f"launcher{len(started)}"
        directory.mkdir()
        process = Process(directory, *args, env=env, uri=uri)
        started.append(process)
        return process

    yield run
    for process in started:
        process.stop()


def test_ready_means_the_socket_was_renamed_and_answers(start: Any) -> None:
    launcher = start()
    assert not init_socket_path(launcher.share).exists()
    assert launcher.client.negotiate_version() == 1
    launcher.client.ping()
    lines = [json.loads(line) for line in launcher.logs().splitlines() if line.startswith("{")]
    ready = next(line for line in lines if line["msg"] == "Marked as ready")
    assert ready["component"] == "virt-launcher"
    assert ready["name"] == launcher.vmi["metadata"]["name"]


def test_exits_when_no_domain_starts_in_time(start: Any) -> None:
    launcher = start("--qemu-timeout", "1s")
    assert launcher.process.wait(20) == 1
    assert launcher.exit_reason() == "timed out waiting for the domain to start (1s)"
    assert not cmd_socket_path(launcher.share).exists()  # the socket goes with the process


def test_exits_when_released_as_migration_target(start: Any) -> None:
    launcher = start(env={"POD_NAME": "target-pod"})
    vmi = launcher.vmi
    vmi["status"]["migrationState"] = {"targetPod": "target-pod"}
    launcher.client.vmi_command("SignalTargetPodCleanup", vmi)
    assert launcher.process.wait(20) == 0
    assert launcher.exit_reason() == "released as migration target by virt-handler"


def test_sigterm_before_any_domain_exits_at_once(start: Any) -> None:
    launcher = start()
    launcher.process.send_signal(signal.SIGTERM)
    assert launcher.process.wait(20) == 0
    assert launcher.exit_reason() == "SIGTERM before the domain started"


def test_domain_stopped_and_deleted_ends_the_launcher(start: Any) -> None:
    launcher = start()
    launcher.client.sync_vmi(launcher.vmi)
    launcher.client.vmi_command("ShutdownVirtualMachine", launcher.vmi)  # the test driver powers off
    launcher.client.vmi_command("DeleteVirtualMachine", launcher.vmi)
    assert launcher.process.wait(20) == 0
    assert launcher.exit_reason() == "the domain is gone (shut down, killed or migrated away)"


def test_a_shared_libvirt_with_other_domains_serves_only_this_vmi(start: Any) -> None:
    launcher = start(uri="test:///default")  # holds a domain named "test" already
    assert launcher.client.get_domain() is None
    launcher.client.sync_vmi(launcher.vmi)
    domain = launcher.client.get_domain()
    assert domain is not None
    assert domain["Spec"]["Name"] == "default_kb1"


def test_accepts_the_flags_virt_controller_renders(start: Any) -> None:
    launcher = start(
        *("--qemu-timeout", "245s", "--ephemeral-disk-dir", "/var/run/kubevirt-ephemeral-disks"),
        *("--container-disk-dir", "/var/run/kubevirt/container-disks", "--grace-period-seconds", "45"),
        *("--hook-sidecars", "0", "--ovmf-path", "/usr/share/OVMF", "--disk-memory-limit", "2097152000"),
        *("--run-as-nonroot", "--allow-emulation", "--keep-after-failure", "--image-volume"),
        *("--libvirt-log-filters", "3:remote 4:event", "--qemu-agent-sys-interval", "120"),
    )
    launcher.client.ping()
    launcher.process.send_signal(signal.SIGTERM)
    assert launcher.process.wait(20) == 0


def test_sync_prepares_the_disks_or_reports_the_bad_field(start: Any, tmp_path: Path) -> None:
    container_disks, ephemeral = tmp_path / "container-disks", tmp_path / "ephemeral"
    container_disks.mkdir()
    subprocess.run(["qemu-img", "create", "-f", "raw", str(container_disks / "disk_0.img"), "4M"], check=True)
    launcher = start("--container-disk-dir", str(container_disks), "--ephemeral-disk-dir", str(ephemeral))
    vmi = launcher.vmi
    vmi["spec"]["domain"]["devices"]["disks"] = [{"name": "root", "disk": {"bus": "virtio"}}]
    vmi["spec"]["volumes"] = [
        {"name": "root", "containerDisk": {"image": "example/raw:1"}},
        {"name": "ci", "cloudInitNoCloud": {"userDataBase64": "not base64"}},
    ]
    with pytest.raises(CommandFailedError) as caught:
        launcher.client.sync_vmi(vmi)
    assert "spec.volumes[1].cloudInitNoCloud.userDataBase64: not valid base64" in caught.value.reason
    assert launcher.client.get_domain() is None
    assert not ephemeral.exists()  # nothing written for a request refused

    vmi["spec"]["volumes"][1]["cloudInitNoCloud"] = {"userData": "#cloud-config\n"}
    launcher.client.sync_vmi(vmi)
    domain = launcher.client.get_domain()
    assert domain is not None
    disk = domain["Spec"]["Devices"]["Disks"][0]
    assert disk["Source"]["File"] == "/var/run/kubevirt-ephemeral-disks/disk-data/root/disk.qcow2"
    assert disk["BackingStore"]["Format"]["Type"] == "raw"  # probed with qemu-img, not assumed
    assert (ephemeral / "disk-data/root/disk.qcow2").is_file()
    assert (ephemeral / "cloud-init-data/default/kb1/noCloud.iso").is_file()


def test_simulated_crash_fails_at_once(tmp_path: Path) -> None:
    result = subprocess.run(
        [LAUNCHER, "--name", "a", "--namespace", "b", "--uid", "c", "--simulate-crash"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert result.returncode == 1
    assert "simulated crash" in result.stderr


def test_the_monitor_fails_a_simulated_crash_before_starting_anything() -> None:
    monitor = Path(LAUNCHER).with_name("virt-launcher-monitor")
    began = time.monotonic()
    result = subprocess.run(
        [str(monitor), "--name", "a", "--uid", "c", "--simulate-crash"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
        # No virt-launcher on the PATH: the monitor must not need one to crash.
        env={**os.environ, "PATH": "/nonexistent"},
    )
    assert result.returncode == 1
    assert result.stderr.strip() == "virt-launcher: simulated crash (--simulate-crash)"
    # Quicker than the kubelet's one-second look at container states, even on a loaded machine.
    assert time.monotonic() - began < 1.0


def failed_start_log(tmp_path: Path, *args: str, user: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """Run a launcher that must fail at start: exit code 1, no traceback; its JSON log lines. ``user``
    prefixes the command (to run it as another user)."""
    result = subprocess.run(
        [*user, LAUNCHER, "--name", "a", "--namespace", "b", "--uid", "c", *args],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 1
    assert "Traceback" not in output
    return [json.loads(line) for line in output.splitlines() if line.startswith("{")]


@pytest.mark.parametrize(
    ("flag", "message"),
    [
        ("--libvirt-runtime-dir", "cannot start libvirtd"),
        ("--kubevirt-share-dir", "cannot create the launcher's directories"),
    ],
)
def test_start_up_failures_exit_with_a_logged_reason(tmp_path: Path, flag: str, message: str) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    directories = {
        "--kubevirt-share-dir": str(tmp_path / "share"),
        "--libvirt-runtime-dir": str(tmp_path / "rt"),
        "--kubevirt-private-dir": str(tmp_path / "private"),
    }
    directories[flag] = str(blocker / "below-a-file")  # no directory can be made there
    flags = [item for pair in directories.items() for item in pair]
    logged = failed_start_log(tmp_path, "--force-emulation", *flags)
    failure = next(line for line in logged if line["msg"] == message)
    assert failure["level"] == "error"
    assert "below-a-file" in failure["reason"]


def test_a_command_socket_it_cannot_create_ends_the_launcher_with_a_logged_reason(tmp_path: Path) -> None:
    occupied = init_socket_path(tmp_path / "share")
    (occupied / "not-a-socket").mkdir(parents=True)  # a directory where the socket must go
    node = tmp_path / "node.xml"
    node.write_text("<node/>")
    logged = failed_start_log(
        tmp_path,
        *("--libvirt-uri", f"test://{node}"),
        *("--kubevirt-share-dir", str(tmp_path / "share"), "--kubevirt-private-dir", str(tmp_path / "p")),
    )
    failure = next(line for line in logged if line["msg"] == "cannot serve commands")
    assert failure["socket"] == str(occupied)


def _uid_without_passwd_entry() -> int:
    taken = {entry.pw_uid for entry in pwd.getpwall()}
    return next(uid for uid in range(54321, 64000) if uid not in taken)


@pytest.fixture
def user_dirs() -> Iterator[Any]:
    """Share and private directories a given user owns, where that user can reach them."""
    made: list[Path] = []

    def make(uid: int) -> list[str]:
        root = Path(tempfile.mkdtemp(prefix="launcher-user-"))
        made.append(root)
        root.chmod(0o755)
        for name in ("share", "private"):
            (root / name).mkdir()
            os.chown(root / name, uid, uid)
        return ["--kubevirt-share-dir", str(root / "share"), "--kubevirt-private-dir", str(root / "private")]

    yield make
    for root in made:
        shutil.rmtree(root, ignore_errors=True)


def _as_user(uid: int) -> tuple[str, ...]:
    return ("setpriv", "--reuid", str(uid), "--regid", str(uid), "--clear-groups", "--no-new-privs")


@pytest.mark.skipif(os.geteuid() != 0, reason="runs launchers as root and as other users")
@pytest.mark.parametrize(
    ("as_user", "flags", "reason"),
    [
        (False, ("--run-as-nonroot",), "--run-as-nonroot, but virt-launcher runs as root"),
        (True, (), "without --run-as-nonroot: libvirt's system mode needs root"),
        (True, ("--run-as-nonroot",), "has no passwd entry: libvirtd refuses clients it cannot name"),
    ],
)
def test_a_user_libvirt_cannot_run_as_fails_with_a_logged_reason(
    user_dirs: Any, as_user: bool, flags: tuple[str, ...], reason: str
) -> None:
    uid = _uid_without_passwd_entry() if as_user else 0
    logged = failed_start_log(
        Path(), "--force-emulation", *flags, *user_dirs(uid), user=_as_user(uid) if as_user else ()
    )
    failure = next(line for line in logged if line["msg"] == "cannot start libvirtd")
    assert reason in failure["reason"]
