"""The launcher link: read through virt-api's ``launcherstate`` subresource, never by exec."""

from __future__ import annotations

from kubevirt.client import ApiError, ForbiddenError
from kubevirt.virtctl.diagnose import Status
from kubevirt_testing import vm_chain as chain

from .harness import NAME, NS, WithLauncherState, broken, by_name, launcher_state, scene, walk

PATH = f"/apis/subresources.kubevirt.io/v1/namespaces/{NS}/virtualmachineinstances/{NAME}/launcherstate"
EVENT = "last domain event Modified Running/Booted at 2026-01-01T00:00:00Z"


def test_a_running_domain_is_fine_and_shows_its_evidence() -> None:
    api = WithLauncherState(scene(), launcher_state())
    link = by_name(walk(api))["launcher"]
    assert api.paths == [PATH]
    assert link.status is Status.OK
    assert link.message == f"Socket up, domain Running (Booted); {EVENT}."
    assert link.evidence["node"] == "node-a"
    assert link.evidence["domain"] == {"exists": True, "status": "Running", "reason": "Booted"}
    assert link.evidence["lastDomainEvent"]["type"] == "Modified"


def test_a_missing_socket_is_the_broken_link() -> None:
    answer = launcher_state("Missing", message="no launcher socket found for pod pod-1")
    link = broken(walk(WithLauncherState(scene(), answer)))
    assert link.name == "launcher"
    assert link.message == (
        "The launcher's command socket on node node-a is not there "
        f"(no launcher socket found for pod pod-1); {EVENT}."
    )


def test_an_unresponsive_or_unreachable_launcher_is_named() -> None:
    link = broken(walk(WithLauncherState(scene(), launcher_state("Unresponsive", message="watchdog"))))
    assert link.message.startswith("virt-handler marked the launcher on node node-a unresponsive (watchdog)")
    link = broken(walk(WithLauncherState(scene(), launcher_state("Unreachable", message="connection reset"))))
    assert link.message.startswith("The launcher on node node-a does not answer (connection reset)")


def test_a_dead_or_absent_domain_is_named() -> None:
    link = broken(walk(WithLauncherState(scene(), launcher_state(status="Shutoff", reason="Crashed"))))
    assert link.message == f"The domain on node node-a is Shutoff (Crashed); {EVENT}."
    link = broken(walk(WithLauncherState(scene(), launcher_state(status=None))))
    assert link.message == f"The launcher on node node-a answers but has no domain defined; {EVENT}."


def test_a_refused_subresource_is_unseen_and_the_walk_goes_on() -> None:
    refused = ForbiddenError(403, "Forbidden", "cannot get virtualmachineinstances/launcherstate")
    links = walk(WithLauncherState(scene(), refused))
    launcher = by_name(links)["launcher"]
    assert launcher.status is Status.UNKNOWN
    assert launcher.message == f"Could not see the launcher of VMI {NS}/{NAME}: forbidden."
    assert links[-1].name == "migration"
    failed = ApiError(500, "InternalError", "No virt-handler on node node-a found")
    launcher = by_name(walk(WithLauncherState(scene(), failed)))["launcher"]
    assert launcher.status is Status.UNKNOWN
    assert "No virt-handler on node node-a found" in launcher.message


def test_a_vmi_that_is_not_scheduled_or_running_has_no_launcher_to_ask() -> None:
    api = WithLauncherState(scene(vmi=chain.vmi(NAME, NS, phase="Succeeded")), launcher_state())
    links = walk(api, kind="vmi")
    launcher = by_name(links).get("launcher")
    assert api.paths == []
    assert launcher is None or launcher.status is Status.SKIPPED
