"""VMI subresources answered by virt-handler: pause, unpause, freeze, unfreeze, reset, soft reboot and the
guest agent reads.

virt-api checks the VMI first and refuses a conflict itself; only then does it call the handler on the
VMI's node. The PUTs answer 200 with no body once the handler accepted. The guest agent reads answer
every failure, their own checks included, with 500 and the reason as plain text.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kubevirt.client import JSON, VIRTUAL_MACHINE_INSTANCES, VIRTUAL_MACHINES, KubeApi
from kubevirt.virt_api.rest.bodies import Options
from kubevirt.virt_api.rest.handler import HandlerCallError, HandlerLocator, HandlerTransport
from kubevirt.virt_api.rest.kube import get_or_404, get_or_none
from kubevirt.virt_api.rest.lifecycle import VM_NOT_RUNNING, has_condition, vmi_phase
from kubevirt.virt_api.rest.status import VM, VMI, StatusError, conflict, forbidden, internal
from kubevirt_api.core.v1 import VirtualMachineInstancePhase

OK = 200
VMI_NOT_RUNNING = "VMI is not running"
VMI_NOT_PAUSED = "VMI is not paused"
NO_GUEST_AGENT = "VMI does not have guest agent connected"
SNAPSHOT_IN_PROGRESS = "VM snapshot is in progress"
PAUSED, AGENT_CONNECTED = "Paused", "AgentConnected"

Check = Callable[[JSON], None]


def _running(message: str) -> Check:
    def check(vmi: JSON) -> None:
        if vmi_phase(vmi) != VirtualMachineInstancePhase.RUNNING:
            raise conflict(VMI, vmi["metadata"]["name"], message)

    return check


def _pausable(vmi: JSON) -> None:
    name = vmi["metadata"]["name"]
    _running(VM_NOT_RUNNING)(vmi)
    if (vmi.get("spec") or {}).get("livenessProbe") is not None:
        raise forbidden(VMI, name, "Pausing VMIs with LivenessProbe is currently not supported")
    if has_condition(vmi, PAUSED):
        raise conflict(VMI, name, "VMI is already paused")


def _unpausable(vmi: JSON) -> None:
    _running(VMI_NOT_RUNNING)(vmi)
    if not has_condition(vmi, PAUSED):
        raise conflict(VMI, vmi["metadata"]["name"], VMI_NOT_PAUSED)


def _soft_rebootable(vmi: JSON) -> None:
    name = vmi["metadata"]["name"]
    _running(VM_NOT_RUNNING)(vmi)
    if has_condition(vmi, PAUSED, "True"):
        raise conflict(VMI, name, "VMI is paused")
    if not has_condition(vmi, AGENT_CONNECTED):
        acpi = (((vmi.get("spec") or {}).get("domain") or {}).get("features") or {}).get("acpi") or {}
        if acpi.get("enabled") is False:
            raise conflict(VMI, name, "VMI neither have the agent connected nor the ACPI feature enabled")


def _agent_connected(vmi: JSON) -> None:
    _running(VMI_NOT_RUNNING)(vmi)
    if not has_condition(vmi, AGENT_CONNECTED):
        raise conflict(VMI, vmi["metadata"]["name"], NO_GUEST_AGENT)


def _no_check(_vmi: JSON) -> None:
    return None


PUT_CHECKS: dict[str, Check] = {
    "pause": _pausable,
    "unpause": _unpausable,
    "freeze": _running(VM_NOT_RUNNING),
    "unfreeze": _running(VMI_NOT_RUNNING),
    "reset": _no_check,
    "softreboot": _soft_rebootable,
}
GUEST_AGENT_READS = ("guestosinfo", "userlist", "filesystemlist")
# Not a KubeVirt route: the launcher's socket, domain state and last domain event, read-only, for
# ``virtctl diagnose``. It is authorised like the others (a SubjectAccessReview on the subresource).
LAUNCHER_STATE = "launcherstate"


@dataclass
class VMIOperations:
    api: KubeApi
    handlers: HandlerLocator
    transport: HandlerTransport

    def put(self, operation: str, namespace: str, name: str, options: Options, body: bytes) -> int:
        """Checks the VMI, finds its handler and forwards the request (not for a dry run)."""
        if operation == "unpause":
            self._refuse_during_snapshot(namespace, name)
        vmi: JSON | None = None
        try:
            vmi = get_or_404(self.api, VIRTUAL_MACHINE_INSTANCES, namespace, name, VMI, "vmi")
            PUT_CHECKS[operation](vmi)
            url = self.handlers.url_for(vmi, operation)
        except StatusError as err:
            err.message = _explain(operation, vmi, err.message)
            raise
        if options.is_dry_run and operation in ("pause", "unpause"):
            return OK
        try:
            self.transport.put(url, body)
        except HandlerCallError as err:
            raise internal(_explain(operation, vmi, str(err))) from None
        return OK

    def read_guest_agent(self, operation: str, namespace: str, name: str) -> Any:
        """The handler's answer as JSON; every failure is a :class:`GuestAgentReadError` (500)."""
        try:
            vmi = get_or_404(self.api, VIRTUAL_MACHINE_INSTANCES, namespace, name, VMI, "vmi")
            _agent_connected(vmi)
            url = self.handlers.url_for(vmi, operation)
            return json.loads(self.transport.get(url))
        except StatusError as err:
            raise GuestAgentReadError(err.message) from None
        except (HandlerCallError, ValueError) as err:
            raise GuestAgentReadError(str(err)) from None

    def launcher_state(self, namespace: str, name: str) -> Any:
        """What the VMI's handler knows of its launcher; refusals and failures are StatusErrors."""
        vmi = get_or_404(self.api, VIRTUAL_MACHINE_INSTANCES, namespace, name, VMI, "vmi")
        url = self.handlers.url_for(vmi, LAUNCHER_STATE)
        try:
            return json.loads(self.transport.get(url))
        except (HandlerCallError, ValueError) as err:
            raise internal(str(err)) from None

    def _refuse_during_snapshot(self, namespace: str, name: str) -> None:
        vm = get_or_none(self.api, VIRTUAL_MACHINES, namespace, name, "vm")
        if vm is not None and (vm.get("status") or {}).get("snapshotInProgress") is not None:
            raise conflict(VM, name, SNAPSHOT_IN_PROGRESS)


class GuestAgentReadError(Exception):
    """A guest agent read failed; KubeVirt answers these with 500 and the reason as text."""


def _explain(operation: str, vmi: JSON | None, message: str) -> str:
    """A failed reset of a VMI that is not running says which phase it was in."""
    if operation == "reset" and vmi is not None and vmi_phase(vmi) != VirtualMachineInstancePhase.RUNNING:
        return f"Failed to reset non-running VMI with phase {vmi_phase(vmi)}: {message}"
    return message
