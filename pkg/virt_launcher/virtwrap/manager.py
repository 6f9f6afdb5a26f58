"""The domain manager: carries out virt-handler's commands on the one libvirt domain of this launcher.

It has a domain built for a VMI by an injected converter (the request's VMI JSON, virt-handler's options
and the node's facts -> domain XML, see :mod:`.domain_pipeline`), and defines, starts, pauses, stops
and removes it through libvirt-python. Every
command is idempotent where KubeVirt's is (sync is called over and over; stopping an absent domain
succeeds). Live migration is delegated to :mod:`.migration`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Protocol

import libvirt

from kubevirt.log import get_logger
from kubevirt.virt_launcher import COMPONENT
from kubevirt.virt_launcher.virtwrap import api, states
from kubevirt.virt_launcher.virtwrap.domain_json import live_domain_json, metadata_from_domain_xml
from kubevirt.virt_launcher.virtwrap.errors import (
    DomainNotFoundError,
    InvalidRequestError,
    LibvirtCallError,
    ManagerError,
    WrongStateError,
)
from kubevirt.virt_launcher.virtwrap.hotplug_disks import (
    hotplugged_volumes,
    is_hotplug_disk,
    sync_disks,
    sync_key,
)
from kubevirt.virt_launcher.virtwrap.hotplug_ports import allocate_hotplug_ports
from kubevirt.virt_launcher.virtwrap.node import NodeFacts, accepts_slotless_max_memory
from kubevirt.virt_launcher.virtwrap.stats import domain_stats
from kubevirt.virt_launcher.virtwrap.timestamps import format_time, now
from kubevirt.virt_launcher.virtwrap.vmi import VMIFacts


class Converter(Protocol):
    """The request's VMI, virt-handler's options and the node's facts -> the domain XML.
    Raises ``ValueError`` naming the bad field."""

    def __call__(self, vmi: VMIFacts, options: Any, node: NodeFacts) -> str: ...


_ACTIVE = (libvirt.VIR_DOMAIN_RUNNING, libvirt.VIR_DOMAIN_PAUSED, libvirt.VIR_DOMAIN_BLOCKED)


@contextmanager
def libvirt_errors(action: str) -> Iterator[None]:
    """Report libvirt failures as :class:`LibvirtCallError` naming the action."""
    try:
        yield
    except libvirt.libvirtError as err:
        raise LibvirtCallError(f"{action}: {err.get_error_message()}") from err


@contextmanager
def kubevirt_libvirt_errors(action: str, log: Any) -> Iterator[None]:
    """Report libvirt failures worded as KubeVirt's launcher reports an unwrapped libvirt error (defining
    or starting the domain: users see it in virt-handler's SyncFailed event); the action is logged."""
    try:
        yield
    except libvirt.libvirtError as err:
        log.error("libvirt refused", action=action, reason=err.get_error_message())
        raise LibvirtCallError(format_libvirt_error(err)) from err


def format_libvirt_error(err: libvirt.libvirtError) -> str:
    """KubeVirt's ``FormatLibvirtError``."""
    return (
        f"LibvirtError(Code={err.get_error_code() or 0}, Domain={err.get_error_domain() or 0}, "
        f"Message='{err.get_error_message()}')"
    )


class DomainManager:
    def __init__(
        self,
        conn: libvirt.virConnect,
        converter: Converter,
        *,
        node: NodeFacts | None = None,
        on_domain_change: Callable[[], None] | None = None,
        pre_start_hooks: Sequence[Callable[[VMIFacts], None]] = (),  # prepare the pod before a definition
        own_domain: str = "",
    ) -> None:
        # The domain of this launcher's VMI (``<namespace>_<name>``); when empty, the libvirt's only one.
        self._own_domain = own_domain
        self._pre_start_hooks = tuple(pre_start_hooks)
        self.conn = conn
        self._converter = converter
        self._node = node or NodeFacts(slotless_max_memory=accepts_slotless_max_memory(conn.getLibVersion()))
        self._user_paused: set[str] = set()
        # The inputs of the last hotplug pass that left nothing to do (see hotplug_disks.sync_key).
        self._hotplug_settled = ""
        self._unplugging: set[str] = set()  # devices detached that the guest may not have let go of yet
        self._lock = threading.RLock()
        self._notify_change = on_domain_change or (lambda: None)
        self._log = get_logger(component=COMPONENT)

    # -- queries ---------------------------------------------------------------------------------

    def lookup(self, domain_name: str) -> libvirt.virDomain | None:
        try:
            return self.conn.lookupByName(domain_name)
        except libvirt.libvirtError as err:
            if err.get_error_code() == libvirt.VIR_ERR_NO_DOMAIN:
                return None
            raise LibvirtCallError(f"looking up domain {domain_name}: {err.get_error_message()}") from err

    def owns(self, domain_name: str) -> bool:
        """Whether ``domain_name`` is this launcher's domain (any is, without a name to go by)."""
        return not self._own_domain or domain_name == self._own_domain

    def the_domain(self) -> libvirt.virDomain | None:
        """This launcher's domain (a launcher owns at most one)."""
        if self._own_domain:
            return self.lookup(self._own_domain)
        with libvirt_errors("listing domains"):
            domains = self.conn.listAllDomains()
        return domains[0] if domains else None

    def get_domain(self) -> dict[str, Any] | None:
        dom = self.the_domain()
        return None if dom is None else self.domain_to_json(dom)

    def domain_to_json(self, dom: libvirt.virDomain, *, for_event: bool = False) -> dict[str, Any]:
        """The domain as KubeVirt sends it; events also carry the VMI UID in ``ObjectMeta``."""
        with libvirt_errors("reading the domain"):
            state, reason = dom.state()
            xml = dom.XMLDesc(0)
        return live_domain_json(xml, state, reason, for_event=for_event)

    def get_domain_stats(self) -> dict[str, Any] | None:
        dom = self.the_domain()
        if dom is None:
            return None
        with libvirt_errors("reading domain statistics"):
            return domain_stats(self.conn, dom)

    def get_guest_info(self) -> dict[str, Any]:
        # Guest-agent data: none without an agent connected.
        return {}

    # -- lifecycle -------------------------------------------------------------------------------

    def sync_vmi(self, facts: VMIFacts, options: Any = None) -> None:
        with self._lock:
            dom = self.lookup(facts.domain_name)
            defined = dom is None
            if dom is None:
                # Marks where the handler's first sync arrives (the density benchmark reads it).
                self._log.info("preparing the domain", domain=facts.domain_name)
                # The pod's files first (disk images, ISOs): the conversion fits cache modes to them.
                for hook in self._pre_start_hooks:
                    hook(facts)
                xml = self.render_domain(facts, options)
                with kubevirt_libvirt_errors(f"defining domain {facts.domain_name}", self._log):
                    # Defined with free PCIe root ports for hotplug, as KubeVirt defines it.
                    dom = allocate_hotplug_ports(self.conn.defineXML, facts.view, xml, self._log)
                self._log.info("domain defined", domain=facts.domain_name)
            with libvirt_errors(f"reading the state of {facts.domain_name}"):
                state, reason = dom.state()
            if states.is_down(state) and not facts.running_or_final:
                with kubevirt_libvirt_errors(f"starting domain {facts.domain_name}", self._log):
                    _start(dom, paused=facts.start_paused)
                if facts.start_paused:
                    self._user_paused.add(facts.domain_name)
                self._log.info("domain started", domain=facts.domain_name, paused=facts.start_paused)
            elif (
                state == libvirt.VIR_DOMAIN_PAUSED
                and reason not in states.JOB_PAUSE_REASONS
                and facts.domain_name not in self._user_paused
            ):
                with libvirt_errors(f"resuming domain {facts.domain_name}"):
                    dom.resume()
            if not defined:  # a domain defined now has every hotplugged disk that is ready
                self._sync_hotplug_disks(dom, facts, options)
            self._sync_grace_period(dom, facts)

    def _sync_hotplug_disks(self, dom: libvirt.virDomain, facts: VMIFacts, options: Any) -> None:
        """Attach the hotplugged disks the VMI has that the running domain lacks, detach those it no longer
        has (KubeVirt's ``syncDisks``). The VMI is converted again only when something it depends on
        changed since a pass that left nothing to do."""
        with libvirt_errors(f"reading domain {facts.domain_name}"):
            if not dom.isActive():
                return  # only a running domain takes disks live; a defined one has them from its definition
            live = api.Domain.from_xml(dom.XMLDesc(0)).devices.disks
        if not hotplugged_volumes(facts.view) and not any(is_hotplug_disk(disk) for disk in live):
            return
        key = sync_key(facts.view, options, live)
        if key == self._hotplug_settled:
            return
        wanted = api.Domain.from_xml(self.render_domain(facts, options)).devices.disks
        log = self._log.bind(domain=facts.domain_name)
        result = sync_disks(dom, live, wanted, log, unplugging=self._unplugging)
        if result.changed:
            self._notify_change()
        # What changed is checked once more on the next pass (a detach may complete later, in the guest).
        self._hotplug_settled = "" if result.changed or result.waiting else key

    def render_domain(self, facts: VMIFacts, options: Any) -> str:
        """The domain XML for a VMI on this node, KubeVirt's metadata included."""
        try:
            return self._converter(facts, options, self._node)
        except (ValueError, KeyError, TypeError) as err:
            raise InvalidRequestError(f"converting the VMI to a domain: {err}") from err

    def pause_vmi(self, facts: VMIFacts) -> None:
        dom = self.require_domain(facts)
        with self._lock, libvirt_errors(f"pausing domain {facts.domain_name}"):
            state, _ = dom.state()
            if state == libvirt.VIR_DOMAIN_RUNNING:
                dom.suspend()
            if state in (libvirt.VIR_DOMAIN_RUNNING, libvirt.VIR_DOMAIN_PAUSED):
                self._user_paused.add(facts.domain_name)

    def unpause_vmi(self, facts: VMIFacts) -> None:
        dom = self.require_domain(facts)
        with self._lock, libvirt_errors(f"resuming domain {facts.domain_name}"):
            state, _ = dom.state()
            if state == libvirt.VIR_DOMAIN_PAUSED:
                dom.resume()
            self._user_paused.discard(facts.domain_name)

    def shutdown_vmi(self, facts: VMIFacts) -> None:
        dom = self.lookup(facts.domain_name)
        if dom is None:
            return
        with self._lock, libvirt_errors(f"shutting down domain {facts.domain_name}"):
            state, _ = dom.state()
            if state not in (libvirt.VIR_DOMAIN_RUNNING, libvirt.VIR_DOMAIN_PAUSED):
                return
            self._mark_shutdown_started(dom, facts)
            try:
                dom.shutdownFlags(libvirt.VIR_DOMAIN_SHUTDOWN_ACPI_POWER_BTN)
            except libvirt.libvirtError as err:
                if err.get_error_code() not in (libvirt.VIR_ERR_INVALID_ARG, libvirt.VIR_ERR_NO_SUPPORT):
                    raise
                dom.shutdown()  # drivers without the ACPI flag (the test driver)
        self._log.info("domain shutdown requested", domain=facts.domain_name)

    def kill_vmi(self, facts: VMIFacts) -> None:
        dom = self.lookup(facts.domain_name)
        if dom is None:
            return
        with self._lock, libvirt_errors(f"destroying domain {facts.domain_name}"):
            state, _ = dom.state()
            if state in (*_ACTIVE, libvirt.VIR_DOMAIN_SHUTDOWN, libvirt.VIR_DOMAIN_PMSUSPENDED):
                dom.destroyFlags(libvirt.VIR_DOMAIN_DESTROY_GRACEFUL)
            self._user_paused.discard(facts.domain_name)
        self._log.info("domain killed", domain=facts.domain_name)

    def delete_vmi(self, facts: VMIFacts) -> None:
        dom = self.lookup(facts.domain_name)
        if dom is None:
            return
        with self._lock, libvirt_errors(f"undefining domain {facts.domain_name}"):
            try:
                dom.undefineFlags(libvirt.VIR_DOMAIN_UNDEFINE_KEEP_NVRAM)
            except libvirt.libvirtError as err:
                if err.get_error_code() not in (libvirt.VIR_ERR_INVALID_ARG, libvirt.VIR_ERR_NO_SUPPORT):
                    raise
                dom.undefine()
        self._log.info("domain undefined", domain=facts.domain_name)

    def soft_reboot_vmi(self, facts: VMIFacts) -> None:
        dom = self.require_domain(facts)
        with libvirt_errors(f"rebooting domain {facts.domain_name}"):
            state, _ = dom.state()
            if state != libvirt.VIR_DOMAIN_RUNNING:
                raise WrongStateError(
                    f"domain {facts.domain_name} is {states.state_name(state)}: only a running domain reboots"
                )
            features = api.Domain.from_xml(dom.XMLDesc(0)).features
            if features is None or features.acpi is None:
                raise WrongStateError(
                    f"VMI {facts.namespace}/{facts.name} has neither a connected guest agent nor ACPI"
                )
            try:
                dom.reboot(libvirt.VIR_DOMAIN_REBOOT_ACPI_POWER_BTN)
            except libvirt.libvirtError as err:
                if err.get_error_code() not in (libvirt.VIR_ERR_INVALID_ARG, libvirt.VIR_ERR_NO_SUPPORT):
                    raise
                dom.reboot(0)

    def reset_vmi(self, facts: VMIFacts) -> None:
        dom = self.require_domain(facts)
        with libvirt_errors(f"resetting domain {facts.domain_name}"):
            state, _ = dom.state()
            if state not in _ACTIVE:
                raise WrongStateError(
                    f"domain {facts.domain_name} is {states.state_name(state)}: only a running domain resets"
                )
            dom.reset(0)

    def prepare_migration_target(self, facts: VMIFacts, options: Any = None) -> None:
        """Get ready to receive the domain: check it converts here; the source sends the definition."""
        for hook in self._pre_start_hooks:
            hook(facts)
        self.render_domain(facts, options)

    def mark_for_graceful_shutdown(self) -> None:
        """Record in the domain that the launcher was asked to stop (virt-handler then shuts it down)."""
        dom = self.the_domain()
        if dom is None:
            return
        with self._lock:
            metadata = self._read_metadata(dom)
            grace = metadata.grace_period or api.GracePeriodMetadata()
            if grace.marked_for_graceful_shutdown:
                return
            grace.marked_for_graceful_shutdown = True
            metadata.grace_period = grace
            self.write_metadata(dom, metadata)

    # -- metadata --------------------------------------------------------------------------------

    def read_metadata(self, dom: libvirt.virDomain) -> api.KubeVirtMetadata:
        with self._lock:
            return self._read_metadata(dom)

    def _read_metadata(self, dom: libvirt.virDomain) -> api.KubeVirtMetadata:
        with libvirt_errors("reading the domain"):
            xml = dom.XMLDesc(0)
        return metadata_from_domain_xml(xml)

    def write_metadata(self, dom: libvirt.virDomain, metadata: api.KubeVirtMetadata) -> None:
        with self._lock, libvirt_errors("writing the domain metadata"):
            flags = libvirt.VIR_DOMAIN_AFFECT_CONFIG if dom.isPersistent() else 0
            if dom.isActive():
                flags |= libvirt.VIR_DOMAIN_AFFECT_LIVE
            dom.setMetadata(
                libvirt.VIR_DOMAIN_METADATA_ELEMENT, metadata.to_xml(), "kubevirt", api.KUBEVIRT_NS, flags
            )
        self._notify_change()

    def update_metadata(self, dom: libvirt.virDomain, change: Callable[[api.KubeVirtMetadata], None]) -> None:
        with self._lock:
            metadata = self._read_metadata(dom)
            change(metadata)
            self.write_metadata(dom, metadata)

    def _mark_shutdown_started(self, dom: libvirt.virDomain, facts: VMIFacts) -> None:
        metadata = self._read_metadata(dom)
        grace = metadata.grace_period or api.GracePeriodMetadata(
            deletion_grace_period_seconds=facts.grace_period_seconds
        )
        if grace.deletion_timestamp is not None:
            return
        grace.deletion_timestamp = format_time(now())
        metadata.grace_period = grace
        self.write_metadata(dom, metadata)

    def _sync_grace_period(self, dom: libvirt.virDomain, facts: VMIFacts) -> None:
        metadata = self._read_metadata(dom)
        grace = metadata.grace_period or api.GracePeriodMetadata()
        if (
            metadata.grace_period is not None
            and grace.deletion_grace_period_seconds == facts.grace_period_seconds
        ):
            return
        grace.deletion_grace_period_seconds = facts.grace_period_seconds
        metadata.grace_period = grace
        self.write_metadata(dom, metadata)

    def require_domain(self, facts: VMIFacts) -> libvirt.virDomain:
        dom = self.lookup(facts.domain_name)
        if dom is None:
            raise DomainNotFoundError()
        return dom


def _start(dom: libvirt.virDomain, *, paused: bool) -> None:
    if not paused:
        dom.createWithFlags(0)
        return
    try:
        dom.createWithFlags(libvirt.VIR_DOMAIN_START_PAUSED)
    except libvirt.libvirtError as err:
        if err.get_error_code() not in (libvirt.VIR_ERR_INVALID_ARG, libvirt.VIR_ERR_NO_SUPPORT):
            raise
        dom.createWithFlags(0)  # drivers that cannot start paused (the test driver): pause at once
        dom.suspend()


__all__ = ["Converter", "DomainManager", "ManagerError", "libvirt_errors"]
