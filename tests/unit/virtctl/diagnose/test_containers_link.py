"""The container link: image pull errors, exited containers, or running ones."""

from __future__ import annotations

from kubevirt.virtctl.diagnose import Status
from kubevirt_testing import vm_chain as chain

from .harness import NAME, NS, broken, by_name, scene, walk

SCHEDULING = chain.vmi(NAME, NS, phase="Scheduling", node=None, conditions=[])


def test_image_pull_backoff_names_the_container_image_and_message() -> None:
    said = 'Back-off pulling image "registry.local/virt-launcher:v1.6"'

    def pod(uid: str) -> dict[str, object]:
        waiting = chain.waiting_container("ImagePullBackOff", said)
        return chain.launcher_pod(NAME, NS, uid, phase="Pending", containers=[waiting])

    link = broken(walk(scene(vmi=SCHEDULING, pod=pod)))
    assert link.name == "containers"
    assert link.message == (
        f"Container compute (image {chain.LAUNCHER_IMAGE}) cannot start: ImagePullBackOff: {said} "
        "(pod virt-launcher-vm1-abcde)."
    )
    assert link.evidence["containers"] == ["compute: waiting ImagePullBackOff"]


def test_an_exited_compute_container_is_named() -> None:
    exited = {**chain.running_container(), "state": {"terminated": {"reason": "Error", "exitCode": 2}}}

    def pod(uid: str) -> dict[str, object]:
        return chain.launcher_pod(NAME, NS, uid, phase="Failed", containers=[exited])

    link = broken(walk(scene(pod=pod)))
    assert link.message.startswith("Container compute has exited (Error, exit code 2)")


def test_running_containers_are_fine() -> None:
    link = by_name(walk(scene()))["containers"]
    assert (link.status, link.message) == (
        Status.OK,
        "all containers are running in pod virt-launcher-vm1-abcde.",
    )


def test_a_terminating_launcher_pod_is_named() -> None:
    def pod(uid: str) -> dict[str, object]:
        built = chain.launcher_pod(NAME, NS, uid)
        built["metadata"]["deletionTimestamp"] = chain.stamp(chain.NOW)
        return built

    link = broken(walk(scene(pod=pod)))
    assert link.message == (
        f"The launcher pod virt-launcher-vm1-abcde is being deleted (since {chain.stamp(chain.NOW)})."
    )
