"""The DHCP server process (dnsmasq), started in the pod by virt-launcher and stopped with it."""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import threading
import time
from collections.abc import Callable

from kubevirt.log import get_logger
from kubevirt.network.dhcp.dnsmasq import ServerSpec, dnsmasq_args
from kubevirt.network.errors import NetworkError

READY_TIMEOUT = 10.0


class DHCPServerError(NetworkError):
    """The DHCP server could not be started."""


def dnsmasq_binary() -> str:
    found = shutil.which("dnsmasq") or next(
        (p for p in ("/usr/sbin/dnsmasq", "/sbin/dnsmasq") if shutil.which(p)), None
    )
    if not found:
        raise DHCPServerError("dnsmasq is not installed")
    return found


class DHCPServer:
    """One dnsmasq; :meth:`start` returns once it serves (its ``DHCP, ...`` start-up line)."""

    def __init__(
        self, spec: ServerSpec, *, popen: Callable[..., subprocess.Popen[str]] = subprocess.Popen
    ) -> None:
        self.spec = spec
        self._popen = popen
        self.process: subprocess.Popen[str] | None = None
        self.log_lines: list[str] = []
        self._ready = threading.Event()
        self._log = get_logger()

    def start(self) -> None:
        command = [dnsmasq_binary(), *dnsmasq_args(self.spec)]
        # In the launcher's process group: whatever ends the launcher's group ends its DHCP server too.
        self.process = self._popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        threading.Thread(target=self._follow, name="dhcp-log", daemon=True).start()
        deadline = time.monotonic() + READY_TIMEOUT
        while not self._ready.wait(0.02):
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                said = " | ".join(self.log_lines[-5:])
                raise DHCPServerError(f"the DHCP server for {self.spec.interface} did not start: {said}")
        self._log.info("DHCP server started", interface=self.spec.interface, mac=self.spec.config.mac)

    def _follow(self) -> None:
        assert self.process is not None
        assert self.process.stderr is not None
        for line in self.process.stderr:
            line = line.rstrip()
            self.log_lines.append(line)
            del self.log_lines[:-200]
            if "DHCP, " in line or "DHCP, static leases" in line:
                self._ready.set()
            self._log.debug("dnsmasq", line=line)

    def stop(self) -> None:
        if self.process is None:
            return
        if self.process.poll() is None:
            self.process.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired, ChildProcessError):
                self.process.wait(5)
            if self.process.poll() is None:
                self.process.kill()
        self.process = None
