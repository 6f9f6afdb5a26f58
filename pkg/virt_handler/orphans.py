"""Orphan cleanup: a launcher on this node still holding a domain whose VMI no longer exists.

Pods none of this node's VMIs lists are visited; when such a launcher's domain names a VMI that is gone
(or was replaced by one with another UID), the domain is shut down as a deleted VMI's would be (ACPI,
then a kill once the grace period in its metadata is over) and then undefined, so its launcher exits.
The VMIs this node is a migration target for count as this node's: their target pod holds the incoming
domain while the VMI still names the source node. Run once the VMI caches have synced (right after
virt-handler starts, then periodically).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol

from kubevirt.controller import Store
from kubevirt.handler_launcher_com.cmd.client import LauncherClientError, LauncherDisconnectedError
from kubevirt.handler_launcher_com.sockets import READY_SOCKET
from kubevirt.log import get_logger
from kubevirt.virt_handler import phase as phases
from kubevirt.virt_handler.launcher_sockets import (
    SocketLookupError,
    is_marked_unresponsive,
    launcher_pods,
    socket_dir,
)
from kubevirt.virt_handler.shutdown import RESEND_SECONDS, Action, next_step
from kubevirt_api.view import JSON

PERIOD_SECONDS = 10.0


class OrphanLauncher(Protocol):
    def vmi_command(self, command: str, vmi: JSON) -> None: ...
    def get_domain(self) -> JSON | None: ...
    def close(self) -> None: ...


def _domain_owner(domain: JSON) -> tuple[str, str, str]:
    meta = domain.get("ObjectMeta") or {}
    uid = (((domain.get("Spec") or {}).get("Metadata") or {}).get("KubeVirt") or {}).get("UID") or ""
    return str(meta.get("namespace") or ""), str(meta.get("name") or ""), str(uid)


class OrphanSweeper:
    def __init__(
        self,
        *,
        vmi_store: Store[JSON],
        pods_dir: Path,
        connect: Callable[[Path], OrphanLauncher],
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
        target_store: Store[JSON] | None = None,
    ) -> None:
        self._stores = [vmi_store] if target_store is None else [vmi_store, target_store]
        self._pods_dir = pods_dir
        self._connect = connect
        self._now = now
        self._poked = threading.Event()
        self._log = get_logger()

    def _known_pods(self) -> set[str]:
        return {
            uid
            for store in self._stores
            for vmi in store.list()
            for uid in ((vmi.get("status") or {}).get("activePods") or {})
        }

    def _vmi(self, key: str) -> JSON | None:
        for store in self._stores:
            vmi = store.get_by_key(key)
            if vmi is not None:
                return vmi
        return None

    def sweep(self) -> list[str]:
        """One pass; returns ``namespace/name`` of every orphaned domain acted on."""
        known = self._known_pods()
        acted = []
        for pod_uid in launcher_pods(self._pods_dir):
            if pod_uid in known or is_marked_unresponsive(self._pods_dir, pod_uid):
                continue
            socket = self._pods_dir.joinpath(*socket_dir(pod_uid), READY_SOCKET)
            try:
                launcher = self._connect(socket)
            except SocketLookupError as err:
                self._log.warning("refused a launcher socket", pod=pod_uid, reason=str(err))
                continue
            try:
                owner = self._clean(launcher)
            except LauncherDisconnectedError:
                owner = None
            except LauncherClientError as err:
                self._log.error("cleaning up an orphaned domain failed", pod=pod_uid, reason=str(err))
                owner = None
            finally:
                launcher.close()
            if owner is not None:
                acted.append(owner)
        return acted

    def _clean(self, launcher: OrphanLauncher) -> str | None:
        domain = launcher.get_domain()
        if domain is None:
            return None
        namespace, name, uid = _domain_owner(domain)
        vmi = self._vmi(f"{namespace}/{name}")
        if vmi is not None and (vmi.get("metadata") or {}).get("uid") == uid:
            return None
        stub: JSON = {"metadata": {"namespace": namespace, "name": name, "uid": uid}, "spec": {}}
        if not phases.domain_alive(domain):
            launcher.vmi_command("DeleteVirtualMachine", stub)
            self._log.info("undefined the domain of a deleted VMI", namespace=namespace, name=name, uid=uid)
        else:
            step = next_step(None, domain, self._now())
            if step.action is not Action.WAIT:
                launcher.vmi_command(step.action.value, stub)
            self._log.info(
                "stopping the domain of a deleted VMI",
                namespace=namespace,
                name=name,
                action=step.action.value,
            )
        return f"{namespace}/{name}"

    def poke(self) -> None:
        """Sweep now (a VMI was deleted) instead of at the next period."""
        self._poked.set()

    def run(self, stop: threading.Event, period: float = PERIOD_SECONDS) -> None:
        while not stop.is_set():
            self._poked.clear()
            acted: list[str] = []
            try:
                acted = self.sweep()
            except Exception:  # one bad pass must not end the cleanup for good
                self._log.exception("the orphan sweep failed")
            # A domain being stopped is looked at again soon: ACPI again, or the kill when its time is up.
            wait = min(period, RESEND_SECONDS) if acted else period
            deadline = time.monotonic() + wait
            while not (stop.is_set() or self._poked.is_set()) and time.monotonic() < deadline:
                self._poked.wait(min(1.0, wait))
