"""virt-handler's DaemonSet, laid out as KubeVirt v1.6's operator lays it out (one privileged pod per node
in the host's PID namespace, with the host directories it works in)."""

from __future__ import annotations

from kubevirt import pod_paths
from kubevirt.virt_operator.resource.deployments import https_probe
from kubevirt.virt_operator.resource.rbac import HANDLER_SERVICE_ACCOUNT
from kubevirt.virt_operator.resource.services import metrics_container_port
from kubevirt_api.view import JSON

VIRT_HANDLER = "virt-handler"
KUBELET_ROOT = "/var/lib/kubelet"
# name, host path, mount path, propagation. The kubelet's pods directory is mounted at the short /pods
# because unix socket paths longer than 108 bytes cannot be connected to.
HOST_VOLUMES: tuple[tuple[str, str, str, str | None], ...] = (
    ("libvirt-runtimes", "/var/run/kubevirt-libvirt-runtimes", "/var/run/kubevirt-libvirt-runtimes", None),
    ("virt-share-dir", pod_paths.VIRT_SHARE_DIR, pod_paths.VIRT_SHARE_DIR, "Bidirectional"),
    ("virt-private-dir", pod_paths.VIRT_PRIVATE_DIR, pod_paths.VIRT_PRIVATE_DIR, None),
    ("kubelet-pods", f"{KUBELET_ROOT}/pods", "/pods", None),
    ("kubelet", KUBELET_ROOT, KUBELET_ROOT, "Bidirectional"),
    ("node-labeller", "/var/lib/kubevirt-node-labeller", "/var/lib/kubevirt-node-labeller", None),
)
NODE_LABELLER_DIR = "/var/lib/kubevirt-node-labeller"

# Secret name, mount path: the console server's certificate, and the client one virt-api presents to it.
CERTIFICATE_SECRETS: tuple[tuple[str, str], ...] = (
    ("kubevirt-virt-handler-certs", "/etc/virt-handler/clientcertificates"),
    ("kubevirt-virt-handler-server-certs", "/etc/virt-handler/servercertificates"),
)


def _field_env(name: str, path: str) -> JSON:
    return {"name": name, "valueFrom": {"fieldRef": {"fieldPath": path}}}


def node_labeller_init_container(launcher_image: str, *, force_emulation: bool = False) -> JSON:
    """KubeVirt's init container: the launcher image writes libvirt's view of the node for the labeller."""
    command = ["node-labeller", "--output-dir", NODE_LABELLER_DIR]
    if force_emulation:
        command.append("--force-emulation")
    return {
        "name": "virt-launcher",
        "image": launcher_image,
        "command": command,
        "securityContext": {"privileged": True},
        "volumeMounts": [{"name": "node-labeller", "mountPath": NODE_LABELLER_DIR}],
        "terminationMessagePolicy": "FallbackToLogsOnError",
    }


def handler_daemonset(
    namespace: str,
    image: str,
    *,
    pod_grace_seconds: int = 330,
    verbosity: int = 2,
    launcher_image: str | None = None,
    force_emulation: bool = False,
) -> JSON:
    """With ``launcher_image``, the node labeller's init container runs first (``force_emulation``: it
    describes QEMU's TCG even where /dev/kvm opens)."""
    labels = {"kubevirt.io": VIRT_HANDLER}
    mounts = []
    volumes = []
    for name, host_path, mount_path, propagation in HOST_VOLUMES:
        mount: JSON = {"name": name, "mountPath": mount_path}
        if propagation:
            mount["mountPropagation"] = propagation
        mounts.append(mount)
        volumes.append({"name": name, "hostPath": {"path": host_path}})
    for secret, mount_path in CERTIFICATE_SECRETS:
        # Optional, as KubeVirt's operator attaches them: the pod starts before the secrets exist.
        volumes.append({"name": secret, "secret": {"secretName": secret, "optional": True}})
        mounts.append({"name": secret, "readOnly": True, "mountPath": mount_path})
    container: JSON = {
        "name": VIRT_HANDLER,
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "command": [VIRT_HANDLER],
        "args": [
            "--port",
            "8443",
            "--hostname-override",
            "$(NODE_NAME)",
            "--pod-ip-address",
            "$(MY_POD_IP)",
            "--max-metric-requests",
            "3",
            "--console-server-port",
            "8186",
            "--graceful-shutdown-seconds",
            str(pod_grace_seconds - 15),
            "-v",
            str(verbosity),
        ],
        "ports": [metrics_container_port()],
        "env": [_field_env("NODE_NAME", "spec.nodeName"), _field_env("MY_POD_IP", "status.podIP")],
        "securityContext": {"privileged": True, "seLinuxOptions": {"level": "s0"}},
        "resources": {"requests": {"cpu": "10m", "memory": "325Mi"}},
        "volumeMounts": mounts,
        # KubeVirt's: a virt-handler that stops answering is restarted, and is not ready until it answers.
        "livenessProbe": https_probe(
            "/healthz", failureThreshold=3, initialDelaySeconds=15, timeoutSeconds=10, periodSeconds=45
        ),
        "readinessProbe": https_probe(
            "/healthz", initialDelaySeconds=15, timeoutSeconds=10, periodSeconds=20
        ),
    }
    pod: JSON = {
        "serviceAccountName": HANDLER_SERVICE_ACCOUNT,
        "hostPID": True,
        "terminationGracePeriodSeconds": pod_grace_seconds,
        "tolerations": [{"operator": "Exists"}],
        "containers": [container],
        "volumes": volumes,
    }
    if launcher_image is not None:
        pod["initContainers"] = [
            node_labeller_init_container(launcher_image, force_emulation=force_emulation)
        ]
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": VIRT_HANDLER, "namespace": namespace, "labels": {"kubevirt.io": VIRT_HANDLER}},
        "spec": {
            "selector": {"matchLabels": labels},
            "updateStrategy": {"type": "RollingUpdate"},
            "template": {
                "metadata": {"name": VIRT_HANDLER, "labels": {**labels, "prometheus.kubevirt.io": "true"}},
                "spec": pod,
            },
        },
    }
