"""The images hack/build-images made run in the cluster: virt-launcher's has its binary, libvirt and QEMU, and
virt-launcher's and virt-handler's the tools KubeVirt's functional tests run in them."""

from __future__ import annotations

from localcluster.handle import Cluster


def _run_to_completion(cluster: Cluster, namespace: str, name: str, image: str, script: str) -> str:
    cluster.kubectl(
        "run", name, "-n", namespace, f"--image={image}", "--image-pull-policy=Never", "--restart=Never",
        "--command", "--", "/bin/sh", "-ec", script,
    )  # fmt: skip

    def finished() -> bool:
        phase = cluster.kubectl_json("get", "pod", name, "-n", namespace)["status"].get("phase")  # type: ignore[union-attr]
        return phase in ("Succeeded", "Failed")

    cluster.wait_until(f"pod {name} finished", finished)
    logs = cluster.kubectl("logs", name, "-n", namespace).stdout
    phase = cluster.kubectl_json("get", "pod", name, "-n", namespace)["status"]["phase"]  # type: ignore[index]
    assert phase == "Succeeded", logs
    return logs


def test_virt_launcher_image_has_libvirt_and_qemu(cluster: Cluster, namespace: str) -> None:
    logs = _run_to_completion(
        cluster,
        namespace,
        "launcher-tools",
        cluster.image("virt-launcher"),
        "virt-launcher --version; libvirtd --version; qemu-system-x86_64 --version; virsh --version",
    )
    assert "libvirtd (libvirt) 9.0.0" in logs
    assert "QEMU emulator version 7.2" in logs
    assert "virt-launcher" in logs.splitlines()[0]


def test_virt_launcher_image_has_the_tools_kubevirts_tests_run_on_failure(
    cluster: Cluster, namespace: str
) -> None:
    # KubeVirt's functional suite runs ps, ip and bridge in a failed spec's compute containers.
    logs = _run_to_completion(
        cluster,
        namespace,
        "launcher-debug-tools",
        cluster.image("virt-launcher"),
        "ps -o comm= -p 1; pgrep -x sh; ip -o link show lo; bridge -V; echo done",
    )
    lines = logs.splitlines()
    assert lines[0] == "sh"
    assert lines[1] == "1"
    assert ": lo: " in lines[2]
    assert lines[-1] == "done"


def test_virt_handler_image_has_pgrep_and_ps(cluster: Cluster, namespace: str) -> None:
    # KubeVirt's functional suite runs pgrep in virt-handler's pods.
    logs = _run_to_completion(
        cluster,
        namespace,
        "handler-debug-tools",
        cluster.image("virt-handler"),
        "ps -o comm= -p 1; pgrep -x sh",
    )
    assert logs.splitlines() == ["sh", "1"]
