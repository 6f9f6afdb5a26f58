"""The domain manager: carries out virt-handler's commands on the one libvirt domain of this launcher.

It has a domain built for a VMI by an injected converter (the request's VMI JSON, virt-handler's options
and the node's facts -> domain XML, see :mod:`.domain_pipeline`), and defines, starts, pauses, stops
and removes it through libvirt-python. Every
command is idempotent where KubeVirt's is (sync is called over and over; stopping an absent domain
succeeds). Live migration is delegated to :mod:`.migration`.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, Protocol

import libvirt

from kubevirt import pod_paths
from kubevirt.log import get_logger
from kubevirt.virt_launcher import COMPONENT
from kubevirt.virt_launcher.virtwrap import api, states
from kubevirt.virt_launcher.virtwrap.access_credentials import (
    AccessCredentialWorker,
    LibvirtCredentialAgent,
    Outcome,
    metadata_change,
)
from kubevirt.virt_launcher.virtwrap.agent import (
    AgentCallError,
    AgentError,
    GuestAgent,
    channel_connected,
    format_libvirt_error,
)
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
from kubevirt.virt_launcher.virtwrap.liveupdate import memory_device, requested_vcpus
from kubevirt.virt_launcher.virtwrap.node import NodeFacts, accepts_slotless_max_memory
from kubevirt.virt_launcher.virtwrap.stats import domain_stats, migration_job_info
from kubevirt.virt_launcher.virtwrap.timestamps import format_time, now
from kubevirt.virt_launcher.virtwrap.vmi import VMIFacts


class Converter(Protocol):
    """The request's VMI, virt-handler's options and the node's facts -> the domain XML.
    Raises ``ValueError`` naming the bad field."""

    def __call__(self, vmi: VMIFacts, options: Any, node: NodeFacts) -> str: ...


_ACTIVE = (libvirt.VIR_DOMAIN_RUNNING, libvirt.VIR_DOMAIN_PAUSED, libvirt.VIR_DOMAIN_BLOCKED)
_INACTIVE_STATES = (states.SHUTOFF, states.CRASHED, states.NO_STATE)
_AFFECT_LIVE_AND_CONFIG = libvirt.VIR_DOMAIN_AFFECT_LIVE | libvirt.VIR_DOMAIN_AFFECT_CONFIG
AGENT_CONNECTED = "AgentConnected"
# How long a soft reboot waits for libvirt's reboot through the agent (virt-handler waits 20 s).
AGENT_REBOOT_WAIT = 15.0
# KubeVirt's swtpm state directories (``services.PathForSwtpm``), synced before a freeze: the guest's
# filesystem freeze does not cover the TPM's state.
SWTPM_DIR = "/var/lib/libvirt/swtpm"
NON_ROOT_SWTPM_DIR = f"{pod_paths.VIRT_PRIVATE_DIR}/libvirt/qemu/swtpm"


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
        agent: GuestAgent | None = None,
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
        # What the guest agent reported changes the domain's status: virt-handler hears of it.
        self.agent = agent or GuestAgent(self.the_domain, on_change=lambda: self._notify_change())
        # Access credentials the agent propagates; the outcome goes into the domain's metadata.
        self._credentials = AccessCredentialWorker(
            LibvirtCredentialAgent(self.the_domain, self.agent.caller), self._record_credentials
        )

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
        """The domain as KubeVirt sends it, with what the guest agent reported in its status; events also
        carry the VMI UID in ``ObjectMeta``. Unlike KubeVirt's, GetDomain carries the agent's part too:
        virt-handler reads its status from GetDomain, where KubeVirt's reads its event-fed domain cache."""
        with libvirt_errors("reading the domain"):
            state, reason = dom.state()
            xml = dom.XMLDesc(0)
        guest = self.agent.domain_status_fields()
        return live_domain_json(xml, state, reason, for_event=for_event, guest=guest)

    def sync_agent_poller(self, domain: Mapping[str, Any] | None) -> None:
        """Poll the guest agent while the domain (its JSON, None when gone) runs with the agent's channel
        connected: KubeVirt starts its poller on the agent's connect event and stops it on disconnect."""
        status = str(((domain or {}).get("Status") or {}).get("Status") or states.NO_STATE)
        self.agent.set_polling(status not in _INACTIVE_STATES and channel_connected(domain))

    def close(self) -> None:
        """Stop the access credentials' worker, the guest agent's poller, its pending thaw and its workers."""
        self._credentials.stop()
        self.agent.close()

    def _record_credentials(self, outcome: Outcome) -> None:
        dom = self.the_domain()
        if dom is None:
            return
        try:
            self.update_metadata(dom, metadata_change(outcome))
        except ManagerError as err:  # the domain went away meanwhile
            self._log.warning("cannot record the access credentials' outcome", reason=str(err))

    def get_domain_stats(self) -> dict[str, Any] | None:
        dom = self.the_domain()
        if dom is None:
            return None
        with libvirt_errors("reading domain statistics"):
            # The guest's load averages are the agent's, from its last poll; the job statistics are those
            # of the migration this domain is leaving by, if any (virt-handler's migration series).
            job = migration_job_info(dom)
            return domain_stats(self.conn, dom, load=self.agent.store.load(), migrate_job_info=job)

    # -- the guest agent --------------------------------------------------------------------------

    def get_guest_info(self) -> dict[str, Any]:
        """``VirtualMachineInstanceGuestAgentInfo`` from the last polls (empty fields before any)."""
        return self.agent.guest_info()

    def get_users(self) -> list[dict[str, Any]]:
        return self.agent.users()

    def get_filesystems(self) -> list[dict[str, Any]]:
        return self.agent.filesystems()

    def _agent_domain(self, domain_name: str) -> libvirt.virDomain:
        """The domain an agent request names, when it is this launcher's."""
        dom = self.lookup(domain_name) if self.owns(domain_name) else None
        if dom is None:
            raise DomainNotFoundError(domain_name)
        return dom

    def guest_ping(self, domain_name: str, timeout_seconds: int = 0) -> None:
        self.agent.ping(self._agent_domain(domain_name), timeout_seconds)

    def guest_exec(self, domain_name: str, command: str, args: Sequence[str], timeout_seconds: int) -> str:
        """The standard output of ``command`` run by the agent; :class:`ExecExitError` when it exits
        non-zero."""
        return self.agent.exec_command(self._agent_domain(domain_name), command, args, timeout_seconds)

    def freeze_vmi(self, facts: VMIFacts, unfreeze_timeout_seconds: int) -> None:
        """Freeze the guest's filesystems; they are thawed again after ``unfreeze_timeout_seconds``
        unless unfrozen before (KubeVirt's ``FreezeVMI``)."""
        dom = self.require_domain(facts)
        if self._migration_in_progress(dom):
            raise WrongStateError("Failed to freeze VMI, VMI is currently during migration")

        def thaw_later() -> None:
            self.unfreeze_vmi(facts)

        self.agent.freeze(
            dom,
            max(0, unfreeze_timeout_seconds),
            thaw_later=thaw_later,
            before_freeze=lambda: _sync_tpm_state(facts),
        )
        self._log.info("Freezed vmi", domain=facts.domain_name)

    def unfreeze_vmi(self, facts: VMIFacts) -> None:
        dom = self.require_domain(facts)
        self.agent.thaw(dom)
        self._log.info("Unfreezed vmi", domain=facts.domain_name)

    def _migration_in_progress(self, dom: libvirt.virDomain) -> bool:
        migration = self.read_metadata(dom).migration
        return migration is not None and bool(migration.start_timestamp) and not migration.end_timestamp

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
        # KubeVirt starts watching the credential Secrets once the domain runs (it does nothing twice).
        self._credentials.start(list(facts.view.spec.data.get("accessCredentials") or []))

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

    # -- CPU and memory hotplug -------------------------------------------------------------------

    def update_vcpus(self, facts: VMIFacts) -> None:
        """KubeVirt's ``UpdateVCPUs``: the running domain gets the vCPUs the VMI's topology asks for, now
        and in its definition. KubeVirt also pins new dedicated vCPUs to the pod's CPU set; this launcher
        is given no CPU set to pin to."""
        count = requested_vcpus(facts.view)
        with self._lock:
            dom = self._domain_to_update(facts, "failed to update vCPUs")
            with libvirt_errors("failed to update vCPUs"):
                dom.setVcpusFlags(count, _AFFECT_LIVE_AND_CONFIG)
        self._log.info("vCPUs updated", domain=facts.domain_name, vcpus=count)
        self._notify_change()

    def update_guest_memory(self, facts: VMIFacts) -> None:
        """KubeVirt's ``UpdateGuestMemory``: the domain's virtio-mem device is asked for the memory the VMI
        wants beyond what it booted with; a domain without one gets it attached, now and in its
        definition."""
        wanted = memory_device(facts.view)
        action = "failed to update Guest Memory"
        with self._lock:
            dom = self._domain_to_update(facts, action)
            with libvirt_errors(action):
                live = api.Domain.from_xml(dom.XMLDesc(0)).devices.memory
                if live is not None and live.target is not None and wanted.target is not None:
                    # Only the requested size may change; the rest must be the device libvirt has.
                    live.target.requested = wanted.target.requested
                    dom.updateDeviceFlags(live.to_xml(), libvirt.VIR_DOMAIN_DEVICE_MODIFY_LIVE)
                else:
                    dom.attachDeviceFlags(wanted.to_xml(), _AFFECT_LIVE_AND_CONFIG)
        requested = wanted.target.requested if wanted.target is not None else None
        self._log.info(
            "guest memory updated",
            domain=facts.domain_name,
            virtio_mem_requested=requested.value if requested is not None else 0,
        )
        self._notify_change()

    def _domain_to_update(self, facts: VMIFacts, action: str) -> libvirt.virDomain:
        """The VMI's domain, which must run to be changed live."""
        dom = self.lookup(facts.domain_name)
        if dom is None:
            raise DomainNotFoundError(facts.domain_name)
        with libvirt_errors(action):
            active = dom.isActive()
        if not active:
            raise WrongStateError(f"{action}: domain {facts.domain_name} is not running")
        return dom

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
        """KubeVirt's ``SoftRebootVMI``: through the guest agent (libvirt's reboot with the agent flag,
        the agent's ``guest-shutdown`` in reboot mode) when the VMI's AgentConnected condition is true,
        else by pressing the ACPI power button; an unresponsive agent is no failure."""
        dom = self.require_domain(facts)
        with libvirt_errors(f"rebooting domain {facts.domain_name}"):
            state, _ = dom.state()
            if state != libvirt.VIR_DOMAIN_RUNNING:
                raise WrongStateError(
                    f"domain {facts.domain_name} is {states.state_name(state)}: only a running domain reboots"
                )
            if _agent_connected(facts):
                self._reboot_through_agent(dom)
                return
            features = api.Domain.from_xml(dom.XMLDesc(0)).features
            if _acpi_disabled(facts) or features is None or features.acpi is None:
                raise WrongStateError("VMI neither have the agent connected nor the ACPI feature enabled")
            try:
                dom.reboot(libvirt.VIR_DOMAIN_REBOOT_ACPI_POWER_BTN)
            except libvirt.libvirtError as err:
                if err.get_error_code() not in (libvirt.VIR_ERR_INVALID_ARG, libvirt.VIR_ERR_NO_SUPPORT):
                    raise
                dom.reboot(0)

    def _reboot_through_agent(self, dom: libvirt.virDomain) -> None:
        try:
            self.agent.caller.run(
                "rebooting through the guest agent",
                lambda: dom.reboot(libvirt.VIR_DOMAIN_REBOOT_GUEST_AGENT),
                wait=AGENT_REBOOT_WAIT,
            )
        except AgentCallError as err:
            if err.code != libvirt.VIR_ERR_AGENT_UNRESPONSIVE:
                raise LibvirtCallError(str(err)) from err
            self._log.info("the guest agent did not answer the reboot request", reason=str(err))

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


def _agent_connected(facts: VMIFacts) -> bool:
    """The VMI's AgentConnected condition, as virt-handler last reported it."""
    return any(
        condition.string("type") == AGENT_CONNECTED and condition.string("status") == "True"
        for condition in facts.view.status.items("conditions")
    )


def _acpi_disabled(facts: VMIFacts) -> bool:
    acpi = facts.view.spec.object("domain").object("features").optional_object("acpi")
    return acpi is not None and acpi.optional_boolean("enabled") is False


def _sync_tpm_state(facts: VMIFacts) -> None:
    """Flush the persistent TPM's state directory, as KubeVirt runs ``sync`` on it before a freeze."""
    tpm = facts.view.spec.object("domain").object("devices").optional_object("tpm")
    if tpm is None or not tpm.boolean("persistent"):
        return
    path = NON_ROOT_SWTPM_DIR if facts.non_root else SWTPM_DIR
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as err:
        raise AgentError(f"fsync error to TPM state directory {path}: {err.strerror}") from err


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


__all__ = ["Converter", "DomainManager", "ManagerError", "format_libvirt_error", "libvirt_errors"]
