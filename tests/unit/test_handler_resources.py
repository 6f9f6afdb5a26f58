"""virt-handler's RBAC and DaemonSet as KubeVirt's operator lays them out."""

from __future__ import annotations

from kubevirt.virt_operator.resource.daemonset import handler_daemonset
from kubevirt.virt_operator.resource.rbac import handler_rbac


def test_handler_cluster_role_lets_it_update_vmis_and_patch_nodes() -> None:
    objects = {obj["kind"]: obj for obj in handler_rbac("kubevirt")}
    assert set(objects) == {"ServiceAccount", "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding"}
    rules = objects["ClusterRole"]["rules"]
    vmi_rule = next(r for r in rules if r["resources"] == ["virtualmachineinstances"])
    assert vmi_rule["verbs"] == ["update", "patch", "list", "watch"]
    node_rule = next(r for r in rules if r["resources"] == ["nodes"])
    assert "patch" in node_rule["verbs"]
    assert objects["ClusterRoleBinding"]["subjects"] == [
        {"kind": "ServiceAccount", "name": "kubevirt-handler", "namespace": "kubevirt"}
    ]


def test_daemonset_mounts_the_pods_directory_short_and_names_the_node() -> None:
    daemonset = handler_daemonset("kubevirt", "img", pod_grace_seconds=330)
    pod = daemonset["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert pod["hostPID"] is True
    assert pod["serviceAccountName"] == "kubevirt-handler"
    mounts = {m["name"]: m for m in container["volumeMounts"]}
    assert mounts["kubelet-pods"]["mountPath"] == "/pods"
    assert mounts["virt-share-dir"]["mountPropagation"] == "Bidirectional"
    assert container["command"] == ["virt-handler"]
    command = container["args"]
    assert command[command.index("--hostname-override") + 1] == "$(NODE_NAME)"
    assert command[command.index("--graceful-shutdown-seconds") + 1] == "315"
