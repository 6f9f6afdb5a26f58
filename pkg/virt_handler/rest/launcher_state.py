"""The read-only ``launcherstate`` route: what virt-handler knows of a VMI's launcher, for diagnosis.

It answers, for a VMI in the handler's own cache: whether the launcher's command socket is there and
answers (``Ready``), is absent (``Missing``), was marked unresponsive by the watchdog
(``Unresponsive``) or failed to answer (``Unreachable``); the domain's state and reason as the launcher
reports them now; and the last change of the domain the handler saw. It changes nothing. Blocking:
run it in a thread.
"""

from __future__ import annotations

from dataclasses import dataclass

from kubevirt.client import JSON
from kubevirt.handler_launcher_com.cmd.client import LauncherClientError
from kubevirt.virt_handler.domain_events import DomainEventLog
from kubevirt.virt_handler.launcher_sockets import SocketLookupError, is_marked_unresponsive
from kubevirt.virt_handler.phase import domain_state
from kubevirt.virt_handler.rest.lifecycle import LauncherLocator, VMIStore, lookup_vmi

READY, MISSING, UNRESPONSIVE, UNREACHABLE = "Ready", "Missing", "Unresponsive", "Unreachable"


def _socket(state: str, message: str = "") -> JSON:
    return {"state": state, "message": message}


@dataclass
class LauncherStateReader:
    vmis: VMIStore
    launchers: LauncherLocator
    domain_events: DomainEventLog

    def read(self, namespace: str, name: str) -> JSON:
        vmi = lookup_vmi(self.vmis, namespace, name)
        uid = str(vmi["metadata"].get("uid") or "")
        last = self.domain_events.last(uid)
        answer: JSON = {
            "socket": _socket(READY),
            "domain": None,
            "lastDomainEvent": last.to_json() if last is not None else None,
        }
        try:
            pod = self.launchers.pod_uid(vmi)
            if is_marked_unresponsive(self.launchers.pods_dir, pod):
                answer["socket"] = _socket(UNRESPONSIVE, "the launcher did not answer the watchdog in time")
                return answer
            launcher = self.launchers.launcher(vmi)
        except (SocketLookupError, OSError) as err:
            answer["socket"] = _socket(MISSING, str(err))
            return answer
        try:
            domain = launcher.get_domain()
        except LauncherClientError as err:
            answer["socket"] = _socket(UNREACHABLE, str(err))
            return answer
        finally:
            launcher.close()
        if domain is None:
            answer["domain"] = {"exists": False}
        else:
            status, reason = domain_state(domain)
            answer["domain"] = {"exists": True, "status": status, "reason": reason}
        return answer
