"""The release manifests: what ``kubectl apply`` installs the operator with, kept in step with the code."""

from __future__ import annotations

from pathlib import Path

import yaml

from kubevirt.virt_operator.resource.release import kubevirt_cr, operator_manifest
from kubevirt_api.core.v1.kubevirt import KubeVirt

RELEASE = Path(__file__).resolve().parents[3] / "manifests" / "release"


def test_the_checked_in_manifests_are_the_generated_ones() -> None:
    on_disk = list(yaml.safe_load_all((RELEASE / "kubevirt-operator.yaml").read_text()))
    assert on_disk == operator_manifest()
    assert list(yaml.safe_load_all((RELEASE / "kubevirt-cr.yaml").read_text())) == [kubevirt_cr()]


def test_operator_manifest_holds_the_namespace_crd_rbac_and_deployment() -> None:
    kinds = {(o["kind"], o["metadata"]["name"]) for o in operator_manifest()}
    assert {
        ("Namespace", "kubevirt"),
        ("CustomResourceDefinition", "kubevirts.kubevirt.io"),
        ("PriorityClass", "kubevirt-cluster-critical"),
        ("ServiceAccount", "kubevirt-operator"),
        ("ClusterRole", "kubevirt-operator"),
        ("ClusterRoleBinding", "kubevirt-operator"),
        ("Role", "kubevirt-operator"),
        ("RoleBinding", "kubevirt-operator-rolebinding"),
        ("Deployment", "virt-operator"),
    } <= kinds


def test_the_operator_can_grant_every_rule_it_installs() -> None:
    # Kubernetes refuses to let a subject create a role with permissions it does not hold itself.
    role = next(
        o
        for o in operator_manifest()
        if o["kind"] == "ClusterRole" and o["metadata"]["name"] == "kubevirt-operator"
    )
    edit = ["get", "delete", "create", "update", "patch", "list", "watch"]
    assert {
        "apiGroups": ["kubevirt.io"],
        "resources": [
            "virtualmachines",
            "virtualmachineinstances",
            "virtualmachineinstancepresets",
            "virtualmachineinstancereplicasets",
        ],
        "verbs": edit,
    } in role["rules"]


def test_operator_deployment_knows_its_own_image() -> None:
    deployment = next(
        o for o in operator_manifest(image="reg/x/virt-operator:v9") if o["kind"] == "Deployment"
    )
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["VIRT_OPERATOR_IMAGE"] == container["image"] == "reg/x/virt-operator:v9"
    assert deployment["spec"]["template"]["spec"]["serviceAccountName"] == "kubevirt-operator"


def test_the_cr_is_a_valid_kubevirt() -> None:
    kv = KubeVirt.model_validate(kubevirt_cr())
    assert kv.metadata is not None
    assert kv.metadata.namespace == "kubevirt"
