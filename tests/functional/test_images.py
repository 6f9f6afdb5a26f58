"""The images hack/build-images made run in the cluster: virt-launcher's has its binary, libvirt and QEMU."""

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
