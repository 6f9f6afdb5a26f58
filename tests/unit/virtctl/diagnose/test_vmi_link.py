"""The VMI link: why none exists (admission, a controller error, Manual, Once), or its phase."""

from __future__ import annotations

from kubevirt.client import EVENTS
from kubevirt.virtctl.diagnose import Status
from kubevirt_testing import vm_chain as chain

from .harness import NAME, NS, RUNNING_VM_STATUS, broken, by_name, scene, walk

DENIED = (
    'admission webhook "virtualmachineinstances-create-validator.kubevirt.io" denied the request: '
    "spec.domain.devices.disks[0].name: Name of disk must be unique."
)


def _vm_with(conditions: list[dict[str, str]] | None = None, **status: object) -> dict[str, object]:
    return chain.vm(NAME, NS, status={"printableStatus": "Stopped", "conditions": conditions or [], **status})


def test_admission_refusal_is_named_with_its_causes() -> None:
    failure = chain.condition("Failure", "True", "FailedCreate", f"Failure while starting VMI: {DENIED}")
    link = broken(walk(scene(vm=_vm_with([failure]), vmi=None)))
    assert link.name == "vmi"
    assert link.message == (
        "Admission refused the VMI the VM tried to create: "
        "spec.domain.devices.disks[0].name: Name of disk must be unique."
    )


def test_admission_refusal_is_found_in_the_vm_events_too() -> None:
    api = scene(vm=_vm_with(), vmi=None)
    message = f"Error creating virtual machine instance: {DENIED}"
    api.add(EVENTS, chain.warning_event(NS, "VirtualMachine", NAME, "FailedCreate", message))
    link = broken(walk(api))
    assert link.message.startswith("Admission refused the VMI the VM tried to create: spec.domain")
    assert link.evidence["vmEvents"] == [f"FailedCreate: {message}"]


def test_another_creation_failure_is_quoted() -> None:
    failure = chain.condition("Failure", "True", "FailedCreate", "Failure while starting VMI: quota exceeded")
    link = broken(walk(scene(vm=_vm_with([failure]), vmi=None)))
    assert (
        link.message == "virt-controller could not create the VMI: Failure while starting VMI: quota exceeded"
    )


def test_manual_without_a_start_request_explains_itself() -> None:
    vm = chain.vm(NAME, NS, run_strategy="Manual")
    link = broken(walk(scene(vm=vm, vmi=None)))
    assert link.name == "vmi"
    assert "runStrategy Manual creates one only on a start request" in link.message


def test_once_that_already_ran_does_not_start_again() -> None:
    vm = chain.vm(NAME, NS, run_strategy="Once", status={"printableStatus": "Stopped", "runStrategy": "Once"})
    link = broken(walk(scene(vm=vm, vmi=None)))
    assert "runStrategy Once already ran its VMI" in link.message


def test_no_vmi_and_no_error_points_at_the_controller() -> None:
    link = broken(walk(scene(vm=chain.vm(NAME, NS), vmi=None)))
    assert "virt-controller has not created one and recorded no error" in link.message


def test_a_final_vmi_names_its_phase_and_reason() -> None:
    vmi = chain.vmi(NAME, NS, phase="Failed", extra_status={"reason": "NodeUnresponsive"})
    link = broken(walk(scene(vmi=vmi)))
    assert link.message == "The VMI has ended in phase Failed (reason NodeUnresponsive)."


def test_a_paused_vmi_is_named() -> None:
    conditions = [*chain.ready_conditions(), chain.condition("Paused", "True", "PausedByUser")]
    link = broken(walk(scene(vmi=chain.vmi(NAME, NS, conditions=conditions))))
    assert link.message == "The VMI is paused (PausedByUser); virtctl unpause resumes it."


def test_a_sync_error_other_than_image_pull_is_the_vmi_link() -> None:
    synced = chain.condition(
        "Synchronized", "False", "FailedCreate", "pods is forbidden: violates PodSecurity"
    )
    vmi = chain.vmi(NAME, NS, phase="Pending", node=None, conditions=[synced])
    link = broken(walk(scene(vmi=vmi, pod=None)))
    assert (
        link.message
        == "virt-controller cannot sync the VMI: FailedCreate: pods is forbidden: violates PodSecurity."
    )


def test_an_image_pull_sync_error_is_left_to_the_container_link() -> None:
    synced = chain.condition("Synchronized", "False", "ImagePullBackOff", "Back-off pulling image")
    vmi = chain.vmi(NAME, NS, phase="Scheduling", node=None, conditions=[synced])

    def pod(uid: str) -> dict[str, object]:
        return chain.launcher_pod(
            NAME,
            NS,
            uid,
            phase="Pending",
            containers=[chain.waiting_container("ImagePullBackOff", "Back-off")],
        )

    links = walk(scene(vmi=vmi, pod=pod))
    assert by_name(links)["vmi"].status is Status.OK
    assert broken(links).name == "containers"


def test_a_vmi_target_starts_at_the_vmi() -> None:
    links = walk(scene(vm=None), kind="vmi")
    assert links[0].name == "vmi"
    assert links[0].message == "phase Running on node node-a, Ready."


def test_a_missing_vmi_target_is_named() -> None:
    link = broken(walk(scene(vm=None, vmi=None), kind="vmi"))
    assert link.message == f"VirtualMachineInstance {NS}/{NAME} does not exist."


def test_the_vm_status_is_evidence_of_a_healthy_vm() -> None:
    links = walk(scene())
    assert links[0].evidence["printableStatus"] == RUNNING_VM_STATUS["printableStatus"]
