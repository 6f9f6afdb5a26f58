"""hack/up's KubeVirt CR and operator manifest for the local cluster: the operator's own knobs (the CR's
pull policy, emulation, seccomp profile) shape what it deploys there, and nothing else of KubeVirt's."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "hack" / "cluster"))

from localcluster import install  # noqa: E402

from kubevirt.virt_operator.resource.config import install_config  # noqa: E402
from kubevirt.virt_operator.resource.daemonset import handler_daemonset  # noqa: E402
from kubevirt.virt_operator.resource.strategy import install_strategy  # noqa: E402
from kubevirt_api.core.v1.kubevirt import KubeVirt  # noqa: E402

JSON = dict[str, Any]


def _deployed_objects() -> dict[tuple[str, str], JSON]:
    cr = install.kubevirt_cr()
    operator = next(o for o in install.operator_objects() if o["kind"] == "Deployment")
    image = operator["spec"]["template"]["spec"]["containers"][0]["image"]
    config = install_config(KubeVirt.model_validate(cr), namespace=install.NAMESPACE, operator_image=image)
    return {(o["kind"], o["metadata"]["name"]): o for o in install_strategy(config, b"CA")}


def test_operator_pods_never_pull_and_run_the_local_image() -> None:
    (deployment,) = [o for o in install.operator_objects() if o["kind"] == "Deployment"]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert container["imagePullPolicy"] == "Never"
    assert container["image"] == "localhost/kubevirt/virt-operator:devel"
    kinds = {o["kind"] for o in install.operator_objects()}
    assert {"Namespace", "CustomResourceDefinition", "ClusterRole", "ServiceAccount"} <= kinds


def test_components_get_local_images_never_pulled() -> None:
    objects = _deployed_objects()
    for kind, name in (("Deployment", "virt-api"), ("Deployment", "virt-controller")):
        (container,) = objects[(kind, name)]["spec"]["template"]["spec"]["containers"]
        assert container["image"] == f"localhost/kubevirt/{name}:devel"
        assert container["imagePullPolicy"] == "Never"
    handler = objects[("DaemonSet", "virt-handler")]["spec"]["template"]["spec"]
    assert handler["containers"][0]["image"] == "localhost/kubevirt/virt-handler:devel"
    assert handler["containers"][0]["imagePullPolicy"] == "Never"


def test_handler_keeps_kubevirts_host_paths_and_propagation() -> None:
    """The local nodes' roots are shared mounts, as real nodes' are: no host path needs moving."""
    plain = handler_daemonset(install.NAMESPACE, "localhost/kubevirt/virt-handler:devel")["spec"]["template"]
    handler = _deployed_objects()[("DaemonSet", "virt-handler")]["spec"]["template"]
    paths = {v["name"]: v["hostPath"]["path"] for v in handler["spec"]["volumes"] if "hostPath" in v}
    plain_paths = {v["name"]: v["hostPath"]["path"] for v in plain["spec"]["volumes"] if "hostPath" in v}
    assert paths == plain_paths
    assert plain_paths["virt-share-dir"] == "/var/run/kubevirt"
    mounts = handler["spec"]["containers"][0]["volumeMounts"]
    assert mounts == plain["spec"]["containers"][0]["volumeMounts"]
    assert {m["name"] for m in mounts if m.get("mountPropagation") == "Bidirectional"} == {
        "virt-share-dir",
        "kubelet",
    }


def test_cr_asks_for_emulation_and_keeps_the_release_fields() -> None:
    cr = install.kubevirt_cr()
    assert cr["metadata"] == {"name": "kubevirt", "namespace": "kubevirt"}
    assert cr["spec"]["configuration"]["developerConfiguration"]["useEmulation"] is True
    # Launchers run non-root (no Root gate), under KubeVirt's seccomp profile.
    assert cr["spec"]["configuration"]["developerConfiguration"]["featureGates"] == ["KubevirtSeccompProfile"]
    assert cr["spec"]["configuration"]["seccompConfiguration"] == {
        "virtualMachineInstanceProfile": {"customProfile": {"localhostProfile": "kubevirt/kubevirt.json"}}
    }
    assert cr["spec"]["workloadUpdateStrategy"] == {}
    assert not cr["spec"].get("customizeComponents")  # the release CR's empty one
