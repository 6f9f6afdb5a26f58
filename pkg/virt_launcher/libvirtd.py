"""A libvirtd of our own, as virt-launcher runs one inside each VMI pod.

Run as root (system mode), the daemon gets private copies of libvirt's system directories (a private
mount namespace binds ``<runtime>/{etc,run,lib,cache,log}`` over ``/etc/libvirt``, ``/run/libvirt``,
``/var/lib/libvirt``, ``/var/cache/libvirt``, ``/var/log/libvirt``), so several launchers on one host never
share state, and its socket lives in ``<runtime>/sock`` where the launcher (and a migration peer) can
reach it. QEMU runs as root with plain-file stdio logs; each daemon has its own host UUID (libvirt refuses
to migrate to a host with the same UUID). A capabilities cache can be seeded, which spares the ~8 s QEMU
probe.

Run as a non-root user (``session``: :mod:`.libvirt_session`), the daemon serves libvirt's session mode
and runs QEMU as that user; only its configuration file, log, PID file and socket stay in ``<runtime>``.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shlex
import shutil
import signal
import subprocess
import time
import urllib.parse
import uuid
from collections.abc import Callable
from pathlib import Path

from kubevirt.log import get_logger
from kubevirt.virt_launcher import COMPONENT, reaper
from kubevirt.virt_launcher.ambient_caps import ambient_raiser
from kubevirt.virt_launcher.libvirt_session import SessionError, SessionLayout

SYSTEM_DIRS = {
    "etc": "/etc/libvirt",
    "run": "/run/libvirt",
    "lib": "/var/lib/libvirt",
    "cache": "/var/cache/libvirt",
    "log": "/var/log/libvirt",
}
_CAPS = Path("qemu/capabilities")
_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    # libvirtd must not outlive the launcher that owns it (a killed pod takes its daemon along).
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)


def _with_ambient_caps(preexec: Callable[[], None]) -> Callable[[], None]:
    """``preexec``, and NET_BIND_SERVICE kept across the exec where a non-root parent holds it."""
    raise_ambient = ambient_raiser()
    if raise_ambient is None:
        return preexec

    def both() -> None:
        preexec()
        raise_ambient()

    return both


_CAP_SYS_ADMIN = 21


def can_unshare_mounts(status: Path = Path("/proc/self/status")) -> bool:
    """Whether this process may make a private mount namespace: it holds CAP_SYS_ADMIN (which a
    container without privileges lacks)."""
    for line in status.read_text().splitlines():
        if line.startswith("CapEff:"):
            return bool(int(line.split()[1], 16) >> _CAP_SYS_ADMIN & 1)
    return False


class LibvirtdError(Exception):
    """libvirtd could not be started."""


def _conf_string(value: str, what: str) -> str:
    """``value`` as a quoted string of libvirt's config files, which have no escapes: a quote,
    backslash or newline would end or break the string, so such a value is refused."""
    if any(character in value for character in '"\\\n\r'):
        raise LibvirtdError(f"{what} {value!r}: quotes, backslashes and newlines are not allowed")
    return f'"{value}"'


class Libvirtd:
    def __init__(
        self,
        runtime_dir: Path,
        *,
        capabilities_cache: Path | None = None,
        migration_ports: tuple[int, int] = (49152, 49215),
        binary: str = "libvirtd",
        log_filters: str = "",
        session: SessionLayout | None = None,
    ) -> None:
        self.session = session
        self.log_filters = log_filters
        self.runtime_dir = runtime_dir
        self.capabilities_cache = capabilities_cache
        self.migration_ports = migration_ports
        self.binary = binary
        self.process: subprocess.Popen[bytes] | None = None
        self._log = get_logger(component=COMPONENT)

    @property
    def socket(self) -> Path:
        return self.runtime_dir / "sock" / "libvirt-sock"

    @property
    def uri(self) -> str:
        mode = "system" if self.session is None else "session"
        return f"qemu+unix:///{mode}?socket={urllib.parse.quote(str(self.socket))}"

    @property
    def run_dir(self) -> Path:
        """libvirt's runtime directory, where the domain's pod sees it as ``/var/run/libvirt``."""
        return self.runtime_dir / "run" if self.session is None else self.session.run_dir

    @property
    def capabilities_dir(self) -> Path:
        return self.runtime_dir / "cache" / _CAPS if self.session is None else self.session.capabilities_dir

    @property
    def log_file(self) -> Path:
        return self.runtime_dir / "libvirtd.log"

    def start(self, timeout: float = 15.0) -> None:
        if self.session is not None:
            try:
                self.session.check_user()
            except SessionError as err:
                raise LibvirtdError(str(err)) from None
        self.write_config()
        self._seed_capabilities()
        env: dict[str, str] | None = None
        preexec = _die_with_parent
        if self.session is not None:
            argv = self.session_argv()
            env = self.session.environment(os.environ)
            preexec = _with_ambient_caps(_die_with_parent)
        elif can_unshare_mounts():
            argv = ["unshare", "--mount", "--propagation", "private", "sh", "-c", self.start_script()]
        else:
            # In a container without CAP_SYS_ADMIN (KubeVirt's launcher pod): the container's own
            # directories are private already, so they are linked instead of bound.
            self._link_system_dirs()
            argv = ["sh", "-c", self.daemon_command()]
        with contextlib.suppress(FileNotFoundError):
            self.socket.unlink()
        log = self.log_file.open("ab")
        with log:
            self.process = reaper.start_owned(
                lambda: subprocess.Popen(
                    argv,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    preexec_fn=preexec,
                    env=env,
                )
            )
        deadline = time.monotonic() + timeout
        while not self.socket.exists():
            if self.process.poll() is not None:
                raise LibvirtdError(f"libvirtd exited with {self.process.returncode}: {self._log_tail()}")
            if time.monotonic() > deadline:
                self.stop()
                raise LibvirtdError(
                    f"libvirtd did not open {self.socket} within {timeout}s: {self._log_tail()}"
                )
            time.sleep(0.02)
        self._log.info(
            "libvirtd started",
            pid=self.process.pid,
            socket=str(self.socket),
            mode="system" if self.session is None else "session",
        )

    def start_script(self) -> str:
        """The shell script that mounts the private directories and runs libvirtd (paths quoted)."""
        quote = shlex.quote
        mounts = " && ".join(
            f"mkdir -p {quote(target)} && mount --bind {quote(str(self.runtime_dir / name))} {quote(target)}"
            for name, target in SYSTEM_DIRS.items()
        )
        return f"{mounts} && {self.daemon_command()}"

    def daemon_command(self) -> str:
        """The shell command running libvirtd on our configuration (paths quoted)."""
        quote = shlex.quote
        config = quote(str(self.runtime_dir / "etc" / "libvirtd.conf"))
        pid_file = quote(str(self.runtime_dir / "libvirtd.pid"))
        return f"exec {quote(self.binary)} --config {config} --pid-file {pid_file}"

    def session_argv(self) -> list[str]:
        """libvirtd in session mode needs no shell: nothing is mounted before it runs."""
        config = str(self.runtime_dir / "etc" / "libvirtd.conf")
        return [self.binary, "--config", config, "--pid-file", str(self.runtime_dir / "libvirtd.pid")]

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self, timeout: float = 10.0) -> None:
        if self.process is None:
            return
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        reaper.forget(self.process.pid)
        self._save_capabilities()

    def write_config(self) -> None:
        """Creates the private directories and writes libvirtd.conf and qemu.conf into ``etc`` (a
        session daemon's qemu.conf into its configuration directory, where session mode reads it)."""
        if self.session is not None:
            self._write_session_config(self.session)
            return
        for name in (*SYSTEM_DIRS, "sock"):
            (self.runtime_dir / name).mkdir(parents=True, exist_ok=True)
        etc = self.runtime_dir / "etc"
        (etc / "libvirtd.conf").write_text(self._libvirtd_conf(['unix_sock_group = "root"']))
        low, high = self.migration_ports
        (etc / "qemu.conf").write_text(
            "\n".join(
                [
                    'user = "root"',
                    'group = "root"',
                    'stdio_handler = "file"',
                    "cgroup_controllers = [ ]",
                    "remember_owner = 0",
                    # QEMU runs as root and needs no file handed to it; without this libvirt would also take
                    # the serial console log from the console log reader it was prepared for.
                    "dynamic_ownership = 0",
                    f"migration_port_min = {low}",
                    f"migration_port_max = {high}",
                    "",
                ]
            )
        )

    def _write_session_config(self, session: SessionLayout) -> None:
        for directory in (self.runtime_dir / "etc", self.runtime_dir / "sock", session.config_dir):
            directory.mkdir(parents=True, exist_ok=True)
        # A non-root daemon cannot give its socket to another group: the socket stays its user's.
        (self.runtime_dir / "etc" / "libvirtd.conf").write_text(self._libvirtd_conf([]))
        low, high = self.migration_ports
        session.qemu_conf.write_text(
            "\n".join(
                [
                    *session.qemu_conf_lines(),
                    f"migration_port_min = {low}",
                    f"migration_port_max = {high}",
                    "",
                ]
            )
        )

    def _libvirtd_conf(self, socket_group: list[str]) -> str:
        return "\n".join(
            [
                f"unix_sock_dir = {_conf_string(str(self.runtime_dir / 'sock'), 'socket directory')}",
                *socket_group,
                'unix_sock_rw_perms = "0770"',
                'auth_unix_ro = "none"',
                'auth_unix_rw = "none"',
                f'host_uuid = "{uuid.uuid4()}"',
                'log_outputs = "3:stderr"',
                *(
                    [f"log_filters = {_conf_string(self.log_filters, 'log filters')}"]
                    if self.log_filters
                    else []
                ),
                "",
            ]
        )

    def _link_system_dirs(self) -> None:
        """Make libvirt's system directories and ours the same: a directory that is a mount point (the
        pod's libvirt-runtime volume) is used where it is, any other is replaced by a link to ours."""
        for name, target in SYSTEM_DIRS.items():
            ours, theirs = self.runtime_dir / name, Path(target)
            if theirs.is_symlink() and theirs.resolve() == ours.resolve():
                continue
            if os.path.ismount(theirs):
                if not ours.is_symlink():
                    shutil.rmtree(ours)
                    ours.symlink_to(theirs)
                continue
            if theirs.is_dir() and not theirs.is_symlink():
                shutil.rmtree(theirs)
            else:
                with contextlib.suppress(FileNotFoundError):
                    theirs.unlink()
            theirs.parent.mkdir(parents=True, exist_ok=True)
            theirs.symlink_to(ours)

    def _seed_capabilities(self) -> None:
        if self.capabilities_cache is None or not self.capabilities_cache.is_dir():
            return
        target = self.capabilities_dir
        target.mkdir(parents=True, exist_ok=True)
        for entry in self.capabilities_cache.glob("*.xml"):
            shutil.copy2(entry, target / entry.name)

    def _save_capabilities(self) -> None:
        if self.capabilities_cache is None:
            return
        source = self.capabilities_dir
        if not source.is_dir():
            return
        with contextlib.suppress(OSError):
            self.capabilities_cache.mkdir(parents=True, exist_ok=True)
            for entry in source.glob("*.xml"):
                destination = self.capabilities_cache / entry.name
                if not destination.exists():
                    tmp = destination.with_suffix(f".{os.getpid()}.tmp")
                    shutil.copy2(entry, tmp)
                    tmp.rename(destination)

    def _log_tail(self, lines: int = 15) -> str:
        try:
            return " | ".join(self.log_file.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""
