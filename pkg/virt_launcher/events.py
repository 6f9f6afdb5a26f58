"""libvirt's event loop and the forwarding of domain lifecycle events to virt-handler.

libvirt calls back on its event-loop thread; callbacks only enqueue, and one worker re-reads the domain
and sends it (so a slow or absent handler never stalls libvirt). Event types follow KubeVirt: ``ADDED``
when a domain is defined or arrives by migration, ``MODIFIED`` otherwise, and a final ``MODIFIED`` with a
deletion timestamp and reason ``NonExistent`` once the domain is gone.

The guest agent connecting or disconnecting (libvirt's agent-lifecycle event) changes the domain too:
its channel's ``state`` is what virt-handler's AgentConnected condition reads. After each report the
agent poller runs or stops with the domain and its agent's channel
(:meth:`DomainManager.sync_agent_poller`).
"""

from __future__ import annotations

import contextlib
import contextvars
import queue
import threading
from collections.abc import Callable
from typing import Any

import libvirt

from kubevirt.log import get_logger
from kubevirt.virt_launcher import COMPONENT
from kubevirt.virt_launcher.notify_client import NotifyClient, NotifyRejectedError, NotifyUnavailableError
from kubevirt.virt_launcher.virtwrap.domain_json import domain_uid, gone_domain_json
from kubevirt.virt_launcher.virtwrap.manager import DomainManager
from kubevirt.virt_launcher.virtwrap.timestamps import now

ADDED = "ADDED"
MODIFIED = "MODIFIED"
DELETED = "DELETED"

_loop_lock = threading.Lock()
_loop_thread: threading.Thread | None = None


def start_event_loop() -> None:
    """Register libvirt's default event loop and run it on a thread (once; before opening connections)."""
    global _loop_thread
    with _loop_lock:
        if _loop_thread is not None:
            return
        libvirt.virEventRegisterDefaultImpl()

        def run() -> None:
            while True:
                libvirt.virEventRunDefaultImpl()

        _loop_thread = threading.Thread(target=run, name="libvirt-events", daemon=True)
        _loop_thread.start()


def event_type_for(event: int, detail: int) -> str:
    if event == libvirt.VIR_DOMAIN_EVENT_DEFINED and detail == libvirt.VIR_DOMAIN_EVENT_DEFINED_ADDED:
        return ADDED
    if event == libvirt.VIR_DOMAIN_EVENT_STARTED and detail == libvirt.VIR_DOMAIN_EVENT_STARTED_MIGRATED:
        return ADDED
    return MODIFIED


_DEVICE_EVENTS = (libvirt.VIR_DOMAIN_EVENT_ID_DEVICE_ADDED, libvirt.VIR_DOMAIN_EVENT_ID_DEVICE_REMOVED)


class DomainEventForwarder:
    """Watches this launcher's domain and reports every change (to virt-handler, and to listeners)."""

    def __init__(self, manager: DomainManager, notifier: NotifyClient | None) -> None:
        self._manager = manager
        self._notifier = notifier
        self._queue: queue.Queue[tuple[str, str] | None] = queue.Queue()
        self._callback_ids: list[int] = []
        self._worker = threading.Thread(
            target=contextvars.copy_context().run, args=(self._work,), name="domain-events", daemon=True
        )
        self._known: dict[str, str] = {}  # domain name -> VMI uid, for the final event
        self._listeners: list[Callable[[str, dict[str, Any]], None]] = []
        self.domain_gone = threading.Event()
        self.final_event_delivered = threading.Event()
        self._log = get_logger(component=COMPONENT)

    @property
    def reports_to_handler(self) -> bool:
        return self._notifier is not None and self._notifier.available

    def add_listener(self, listener: Callable[[str, dict[str, Any]], None]) -> None:
        self._listeners.append(listener)

    def start(self) -> None:
        self._worker.start()
        conn = self._manager.conn
        self._callback_ids.append(
            conn.domainEventRegisterAny(None, libvirt.VIR_DOMAIN_EVENT_ID_LIFECYCLE, self._on_lifecycle, None)
        )
        # A disk hotplugged or unplugged changes the domain virt-handler reports volume status from (an
        # unplug may complete in the guest after the detach call returned).
        for event_id in _DEVICE_EVENTS:
            self._callback_ids.append(conn.domainEventRegisterAny(None, event_id, self._on_device, None))
        # The agent connecting or going away changes the channel state in the domain.
        self._callback_ids.append(
            conn.domainEventRegisterAny(
                None, libvirt.VIR_DOMAIN_EVENT_ID_AGENT_LIFECYCLE, self._on_agent_lifecycle, None
            )
        )

    def stop(self) -> None:
        for callback_id in self._callback_ids:
            with contextlib.suppress(libvirt.libvirtError):
                self._manager.conn.domainEventDeregisterAny(callback_id)
        self._callback_ids.clear()
        self._queue.put(None)
        self._worker.join(timeout=10)
        self._manager.sync_agent_poller(None)

    def poke(self, domain_name: str = "") -> None:
        """Report the domain's current state (after the launcher changed it, e.g. its metadata)."""
        self._queue.put((domain_name, MODIFIED))

    def _on_lifecycle(self, conn: Any, dom: libvirt.virDomain, event: int, detail: int, opaque: Any) -> None:
        name = dom.name()
        if self._manager.owns(name):  # a shared libvirt also reports other launchers' domains
            self._queue.put((name, event_type_for(event, detail)))

    def _on_device(self, conn: Any, dom: libvirt.virDomain, alias: str, opaque: Any) -> None:
        name = dom.name()
        if self._manager.owns(name):
            self._queue.put((name, MODIFIED))

    def _on_agent_lifecycle(
        self, conn: Any, dom: libvirt.virDomain, state: int, reason: int, opaque: Any
    ) -> None:
        name = dom.name()
        if self._manager.owns(name):
            self._log.info("GuestAgentLifecycle event received", domain=name, state=state, reason=reason)
            self._queue.put((name, MODIFIED))

    def _work(self) -> None:
        while (item := self._queue.get()) is not None:
            name, event_type = item
            try:
                self._report(name, event_type)
            except Exception:  # keep forwarding later events whatever happened to this one
                self._log.exception("forwarding a domain event failed", domain=name)

    def _report(self, name: str, event_type: str) -> None:
        dom = self._manager.lookup(name) if name else self._manager.the_domain()
        if dom is not None:
            domain = self._manager.domain_to_json(dom, for_event=True)
            name = domain["Spec"]["Name"]
            self._known[name] = domain_uid(domain)
            self._manager.sync_agent_poller(domain)  # first: a delivery may wait for virt-handler
            self._deliver(event_type, domain)
            return
        self._manager.sync_agent_poller(None)
        if not name or name not in self._known:
            return
        domain = gone_domain_json(name, self._known.pop(name), now())
        self.domain_gone.set()
        if self._deliver(MODIFIED, domain):
            self.final_event_delivered.set()

    def _deliver(self, event_type: str, domain: dict[str, Any]) -> bool:
        for listener in self._listeners:
            listener(event_type, domain)
        if self._notifier is None or not self._notifier.available:
            return True  # no virt-handler listening: nothing to deliver
        try:
            self._notifier.send_domain_event(event_type, domain)
        except (NotifyUnavailableError, NotifyRejectedError) as err:
            self._log.warning("domain event not delivered", event=event_type, reason=str(err))
            return False
        return True
