"""The launcher watchdog: a launcher whose command socket stops answering is declared unresponsive.

Every third of the timeout (plus a second) each known launcher socket on the node is dialled. A socket
that has refused every dial for longer than ``--watchdog-timeout`` gets the ``launcher-unresponsive``
marker next to it, and its VMI is queued: the VM controller then treats the launcher as gone (a
Running VMI becomes Failed). A socket that answers again is forgiven. This is KubeVirt's domain
watcher watchdog; a ``kill -9`` of the launcher is what it is for.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from kubevirt.controller import Store, key_of
from kubevirt.log import get_logger
from kubevirt.virt_handler.launcher_sockets import (
    SocketLookupError,
    find_launcher_socket,
    mark_unresponsive,
    pod_uid_of,
)
from kubevirt_api.core.v1 import VirtualMachineInstancePhase

DEFAULT_TIMEOUT_SECONDS = 30
DIAL_TIMEOUT_SECONDS = 1.0


def socket_answers(path: Path, timeout: float = DIAL_TIMEOUT_SECONDS) -> bool:
    """Whether something accepts connections on the unix socket ``path``."""
    try:
        # Through the directory's descriptor: a deep pods directory must not hit the address size limit.
        directory = os.open(path.parent, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
            probe.settimeout(timeout)
            try:
                probe.connect(f"/proc/self/fd/{directory}/{path.name}")
            except OSError:
                return False
        return True
    finally:
        os.close(directory)


class SocketWatchdog:
    """Which sockets have stayed silent for longer than the timeout (pure bookkeeping, with a clock)."""

    def __init__(self, timeout: float, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._timeout = timeout
        self._clock = clock
        self._silent_since: dict[Path, float] = {}

    def expired(self, silent: Iterable[Path]) -> list[Path]:
        """Record this round's silent sockets; return those silent for longer than the timeout."""
        now = self._clock()
        current = set(silent)
        self._silent_since = {path: self._silent_since.get(path, now) for path in current}
        return sorted(path for path, since in self._silent_since.items() if now - since > self._timeout)


class LauncherWatchdog:
    """Dials the launchers of this node's VMIs and marks the silent ones unresponsive."""

    def __init__(
        self,
        *,
        vmi_store: Store[dict[str, Any]],
        node: str,
        pods_dir: Path,
        enqueue: Callable[[str], None],
        timeout: float = DEFAULT_TIMEOUT_SECONDS,
        dial: Callable[[Path], bool] = socket_answers,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._vmis = vmi_store
        self._node = node
        self._pods_dir = pods_dir
        self._enqueue = enqueue
        self._timeout = timeout
        self._dial = dial
        self._sockets = SocketWatchdog(timeout, clock=clock)
        self._log = get_logger()

    @property
    def period(self) -> float:
        # Two failed rounds at least before the timeout expires.
        return self._timeout / 3 + 1

    def check(self) -> list[str]:
        """One round; returns the keys of the VMIs whose launcher was marked unresponsive."""
        owners: dict[Path, str] = {}
        for vmi in self._vmis.list():
            status = vmi.get("status") or {}
            if status.get("phase") not in (
                VirtualMachineInstancePhase.SCHEDULED,
                VirtualMachineInstancePhase.RUNNING,
            ):
                continue
            try:
                path = find_launcher_socket(self._pods_dir, status.get("activePods") or {}, self._node)
            except SocketLookupError:
                if status.get("phase") == VirtualMachineInstancePhase.RUNNING:
                    self._enqueue(key_of(vmi))  # the socket went away: the controller decides
                continue
            owners[path] = key_of(vmi)
        silent = [path for path in owners if not self._dial(path)]
        marked = []
        for path in self._sockets.expired(silent):
            key = owners[path]
            self._log.warning("detected unresponsive virt-launcher command socket", socket=str(path), key=key)
            try:
                mark_unresponsive(self._pods_dir, pod_uid_of(self._pods_dir, path))
            except (OSError, SocketLookupError) as err:
                self._log.error("cannot mark the launcher unresponsive", socket=str(path), reason=str(err))
                continue
            marked.append(key)
            self._enqueue(key)
        return marked

    def run(self, stop: threading.Event) -> None:
        while not stop.wait(self.period):
            try:
                self.check()
            except Exception:  # one bad round must not end the watchdog
                self._log.exception("the launcher watchdog round failed")
