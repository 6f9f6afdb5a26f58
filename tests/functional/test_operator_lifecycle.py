"""virt-operator keeps a running VM's installation alive through what changes under it: certificates that
rotate (short lives asked for through the CR's ``certificateRotateStrategy``) and an upgrade to another
release (the same images under a second tag, installed by applying that release's operator manifest, as
KubeVirt's documented upgrade does). Through both, the VM keeps running on the same launcher pod, and
virt-api still reaches virt-handler (pause and unpause go through it) and still answers its webhooks."""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from localcluster import images, install, up
from localcluster.handle import Cluster
from localcluster.vmis import INVALID_VMI_CAUSE, invalid_vmi_refusal

REPO = Path(__file__).resolve().parents[2]
VM_MANIFEST = REPO / "examples" / "vm-test-guest-no-network.yaml"
VM_NAMESPACE = f"lifecycle-test-{os.getpid()}"
UPGRADE_TAG = "devel-upgrade"
CA_SECRET = "kubevirt-ca"
HANDLER_SERVER_SECRET = "kubevirt-virt-handler-server-certs"
# Server certificates renewed 30 s after they are issued, the CA a minute after: several rotations of
# each happen while the module runs.
ROTATION = {
    "selfSigned": {
        "ca": {"duration": "30m", "renewBefore": "29m"},
        "server": {"duration": "10m", "renewBefore": "9m30s"},
    }
}

JSON = dict[str, Any]


@pytest.fixture(scope="module")
def running_vm(cluster: Cluster) -> Iterator[tuple[str, str]]:
    """KubeVirt installed with short certificate lives, and a VM Running; yields (name, VMI uid)."""
    cr = install.kubevirt_cr()
    cr["spec"]["certificateRotateStrategy"] = ROTATION
    try:
        with install.installed(cluster, cr):
            cluster.fresh_namespace(VM_NAMESPACE)
            try:
                name = up.start_vm(cluster, VM_MANIFEST, namespace=VM_NAMESPACE, timeout=300)
                vmi = cluster.find("vmi", name, VM_NAMESPACE)
                assert vmi is not None
                yield name, vmi["metadata"]["uid"]
            finally:
                cluster.kubectl(
                    "delete", "namespace", VM_NAMESPACE, "--ignore-not-found", "--wait=true", check=False
                )
    finally:
        images.untag_all(cluster.layout, UPGRADE_TAG)


def _certificate(cluster: Cluster, secret: str) -> bytes:
    found = cluster.find("secret", secret, install.NAMESPACE)
    assert found is not None, secret
    return base64.b64decode(found["data"]["tls.crt"])


def _vmi(cluster: Cluster, name: str) -> JSON:
    return cluster.find("vmi", name, VM_NAMESPACE) or {}


def _assert_still_running(cluster: Cluster, name: str, uid: str) -> None:
    vmi = _vmi(cluster, name)
    assert vmi["metadata"]["uid"] == uid, "the VMI was replaced"
    assert vmi["status"]["phase"] == "Running"


def _paused(cluster: Cluster, name: str) -> bool:
    conditions = _vmi(cluster, name).get("status", {}).get("conditions", [])
    return any(c["type"] == "Paused" and c["status"] == "True" for c in conditions)


def _pause_and_unpause(cluster: Cluster, name: str) -> None:
    """virt-api → virt-handler with mutual TLS, both ways."""
    for verb, paused in (("pause", True), ("unpause", False)):
        answer = up.virtctl(cluster, verb, "vmi", name, "-n", VM_NAMESPACE)
        assert answer.returncode == 0, f"virtctl {verb}: {answer.stderr.strip()}"
        cluster.wait_until(
            f"VMI {name} paused={paused}", lambda p=paused: _paused(cluster, name) == p, timeout=60
        )


def test_certificates_rotate_under_a_running_vm(cluster: Cluster, running_vm: tuple[str, str]) -> None:
    name, uid = running_vm
    ca_before = _certificate(cluster, CA_SECRET)
    handler_before = _certificate(cluster, HANDLER_SERVER_SECRET)
    cluster.wait_until(
        "the CA and virt-handler's certificate are renewed",
        lambda: (
            _certificate(cluster, CA_SECRET) != ca_before
            and _certificate(cluster, HANDLER_SERVER_SECRET) != handler_before
        ),
        timeout=180,
    )
    # The bundle holds the new CA; the components pick the renewed files up as the kubelet refreshes them.
    bundle = cluster.find("configmap", CA_SECRET, install.NAMESPACE)
    assert bundle is not None
    assert bundle["data"]["ca-bundle"].count("BEGIN CERTIFICATE") >= 2
    _assert_still_running(cluster, name, uid)
    _pause_and_unpause(cluster, name)
    assert INVALID_VMI_CAUSE in invalid_vmi_refusal(cluster, VM_NAMESPACE)
    health = json.loads(cluster.kubectl("get", "--raw", "/apis/subresources.kubevirt.io/v1/healthz").stdout)
    assert health["apiserver"]["connectivity"] == "ok"


def test_an_upgrade_rolls_every_component_and_keeps_the_vm(
    cluster: Cluster, running_vm: tuple[str, str]
) -> None:
    name, uid = running_vm
    assert images.tag_all(cluster.layout, UPGRADE_TAG), "no project images to tag"
    install.install_operator(cluster, UPGRADE_TAG)

    def upgraded() -> bool:
        status = (install.kubevirt(cluster) or {}).get("status", {})
        conditions = {c["type"]: c["status"] for c in status.get("conditions", [])}
        return (
            status.get("observedKubeVirtVersion") == UPGRADE_TAG
            and status.get("phase") == "Deployed"
            and conditions.get("Available") == "True"
            and conditions.get("Progressing") == "False"
        )

    cluster.wait_until("KubeVirt is Deployed at the new version", upgraded, timeout=420)
    for kind, workload in (
        ("deployment", "virt-api"),
        ("deployment", "virt-controller"),
        ("daemonset", "virt-handler"),
    ):
        found = cluster.find(kind, workload, install.NAMESPACE)
        assert found is not None, workload
        images_now = [c["image"] for c in found["spec"]["template"]["spec"]["containers"]]
        assert all(image.endswith(f":{UPGRADE_TAG}") for image in images_now), (workload, images_now)
    _assert_still_running(cluster, name, uid)
    _pause_and_unpause(cluster, name)
    assert INVALID_VMI_CAUSE in invalid_vmi_refusal(cluster, VM_NAMESPACE)
