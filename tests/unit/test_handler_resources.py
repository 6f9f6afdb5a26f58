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


def test_the_node_labeller_runs_first_from_the_launcher_image() -> None:
    plain = handler_daemonset("kubevirt", "img")["spec"]["template"]["spec"]
    assert "initContainers" not in plain
    daemonset = handler_daemonset("kubevirt", "img", launcher_image="launcher", force_emulation=True)
    pod = daemonset["spec"]["template"]["spec"]
    (init,) = pod["initContainers"]
    assert init["image"] == "launcher"
    assert init["command"] == [
        "node-labeller",
        "--output-dir",
        "/var/lib/kubevirt-node-labeller",
        "--force-emulation",
    ]
    assert init["securityContext"]["privileged"] is True
    mount = {"name": "node-labeller", "mountPath": "/var/lib/kubevirt-node-labeller"}
    assert init["volumeMounts"] == [mount]
    (handler,) = pod["containers"]
    assert mount in handler["volumeMounts"]


def test_daemonset_mounts_the_console_server_certificates_when_they_exist() -> None:
    pod = handler_daemonset("kubevirt", "img")["spec"]["template"]["spec"]
    volumes = {v["name"]: v for v in pod["volumes"]}
    mounts = {m["name"]: m["mountPath"] for m in pod["containers"][0]["volumeMounts"]}
    assert volumes["kubevirt-virt-handler-server-certs"]["secret"] == {
        "secretName": "kubevirt-virt-handler-server-certs",
        "optional": True,
    }
    assert mounts["kubevirt-virt-handler-server-certs"] == "/etc/virt-handler/servercertificates"
    assert mounts["kubevirt-virt-handler-certs"] == "/etc/virt-handler/clientcertificates"
