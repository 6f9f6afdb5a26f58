"""virt-api's, virt-controller's and virt-exportproxy's Deployments and their PodDisruptionBudgets, laid out
as KubeVirt's operator lays them out (``components/deployments.go``, ``components/pdbs``)."""

from __future__ import annotations

from kubevirt.virt_operator.resource.config import InstallConfig
from kubevirt.virt_operator.resource.rbac import (
    API_SERVICE_ACCOUNT,
    CONTROLLER_SERVICE_ACCOUNT,
    EXPORTPROXY_SERVICE_ACCOUNT,
)
from kubevirt.virt_operator.resource.services import PROMETHEUS_LABEL, metrics_container_port
from kubevirt_api.core.v1.constants import APP_LABEL, APP_LABEL_PREFIX, APP_NAME
from kubevirt_api.view import JSON

VIRT_API = "virt-api"
VIRT_CONTROLLER = "virt-controller"
VIRT_LAUNCHER = "virt-launcher"
VIRT_EXPORTPROXY = "virt-exportproxy"
VIRT_EXPORTSERVER = "virt-exportserver"
PRIORITY_CLASS = "kubevirt-cluster-critical"
API_CERT_SECRET = "kubevirt-virt-api-certs"
HANDLER_CLIENT_CERT_SECRET = "kubevirt-virt-handler-certs"
CONTROLLER_CERT_SECRET = "kubevirt-controller-certs"
EXPORT_CA_SECRET = "kubevirt-export-ca"
EXPORTPROXY_CERT_SECRET = "kubevirt-exportproxy-certs"
_RESTRICTED = {"type": "RuntimeDefault"}
# KubeVirt's images declare USER 1001; this project's images keep root as their user, so the pods say
# which unprivileged user to run as (runAsNonRoot alone would refuse to start them).
NON_ROOT_USER = 1001
NON_ROOT_POD = {"runAsNonRoot": True, "runAsUser": NON_ROOT_USER, "seccompProfile": _RESTRICTED}


def _anti_affinity(name: str) -> JSON:
    term = {
        "labelSelector": {"matchExpressions": [{"key": APP_LABEL, "operator": "In", "values": [name]}]},
        "topologyKey": "kubernetes.io/hostname",
    }
    return {
        "podAntiAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "podAffinityTerm": term}]
        }
    }


def https_probe(path: str, **timing: int) -> JSON:
    return {"httpGet": {"scheme": "HTTPS", "port": 8443, "path": path}, **timing}


def _base(name: str, config: InstallConfig, service_account: str, secrets: dict[str, str]) -> JSON:
    pod_labels = {APP_LABEL: name, PROMETHEUS_LABEL: "true"}
    volumes: list[JSON] = [
        {"name": secret, "secret": {"secretName": secret, "optional": True}} for secret in secrets
    ]
    volumes.append({"name": "profile-data", "emptyDir": {}})
    mounts: list[JSON] = [
        {"name": secret, "mountPath": path, "readOnly": True} for secret, path in secrets.items()
    ]
    mounts.append({"name": "profile-data", "mountPath": "/profile-data"})
    container: JSON = {
        "name": name,
        "image": config.image(name),
        "imagePullPolicy": config.pull_policy,
        "command": [name],
        "volumeMounts": mounts,
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "capabilities": {"drop": ["ALL"]},
            "seccompProfile": _RESTRICTED,
        },
    }
    pod: JSON = {
        "priorityClassName": PRIORITY_CLASS,
        "serviceAccountName": service_account,
        "affinity": _anti_affinity(name),
        "tolerations": [{"key": "CriticalAddonsOnly", "operator": "Exists"}],
        "nodeSelector": {"kubernetes.io/os": "linux"},
        "securityContext": dict(NON_ROOT_POD),
        "containers": [container],
        "volumes": volumes,
    }
    if config.pull_secrets:
        pod["imagePullSecrets"] = [{"name": secret} for secret in config.pull_secrets]
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": name,
            "namespace": config.namespace,
            "labels": {APP_LABEL: name, f"{APP_LABEL_PREFIX}/{APP_NAME}": name},
        },
        "spec": {
            "replicas": config.infra_replicas,
            "selector": {"matchLabels": {APP_LABEL: name}},
            "strategy": {"type": "RollingUpdate"},
            "template": {
                "metadata": {
                    "name": name,
                    "labels": pod_labels,
                    "annotations": {"openshift.io/required-scc": "restricted-v2"},
                },
                "spec": pod,
            },
        },
    }


def api_deployment(config: InstallConfig) -> JSON:
    deployment = _base(
        VIRT_API,
        config,
        API_SERVICE_ACCOUNT,
        {
            API_CERT_SECRET: "/etc/virt-api/certificates",
            HANDLER_CLIENT_CERT_SECRET: "/etc/virt-handler/clientcertificates",
        },
    )
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    container["args"] = [
        "--port",
        "8443",
        "--console-server-port",
        "8186",
        "--subresources-only",
        "-v",
        str(config.verbosity_of(VIRT_API)),
    ]
    container["ports"] = [
        {"name": VIRT_API, "protocol": "TCP", "containerPort": 8443},
        metrics_container_port(),
    ]
    container["readinessProbe"] = https_probe(
        "/apis/subresources.kubevirt.io/v1/healthz", initialDelaySeconds=15, periodSeconds=10
    )
    container["resources"] = {"requests": {"cpu": "5m", "memory": "500Mi"}}
    return deployment


def controller_deployment(config: InstallConfig) -> JSON:
    deployment = _base(
        VIRT_CONTROLLER,
        config,
        CONTROLLER_SERVICE_ACCOUNT,
        {
            CONTROLLER_CERT_SECRET: "/etc/virt-controller/certificates",
            EXPORT_CA_SECRET: "/etc/virt-controller/exportca",
        },
    )
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    container["args"] = [
        "--launcher-image",
        config.image(VIRT_LAUNCHER),
        "--exporter-image",
        config.image(VIRT_EXPORTSERVER),
        "--port",
        "8443",
        "-v",
        str(config.verbosity_of(VIRT_CONTROLLER)),
    ]
    container["ports"] = [metrics_container_port()]
    container["livenessProbe"] = https_probe(
        "/healthz", failureThreshold=8, initialDelaySeconds=15, timeoutSeconds=10
    )
    container["readinessProbe"] = https_probe("/leader", initialDelaySeconds=15, timeoutSeconds=10)
    container["resources"] = {"requests": {"cpu": "10m", "memory": "275Mi"}}
    return deployment


def exportproxy_deployment(config: InstallConfig) -> JSON:
    """KubeVirt's NewExportProxyDeployment; the operator runs it only while the VMExport gate is on."""
    deployment = _base(
        VIRT_EXPORTPROXY,
        config,
        EXPORTPROXY_SERVICE_ACCOUNT,
        {EXPORTPROXY_CERT_SECRET: "/etc/virt-exportproxy/certificates"},
    )
    pod = deployment["spec"]["template"]["spec"]
    # KubeVirt spreads the proxy away from virt-api's pods, not its own.
    pod["affinity"] = _anti_affinity(VIRT_API)
    container = pod["containers"][0]
    container["name"] = "exportproxy"  # "virt-exportproxy" is too long for KubeVirt's container names
    container["command"] = [
        VIRT_EXPORTPROXY,
        "--port",
        "8443",
        "-v",
        str(config.verbosity_of(VIRT_EXPORTPROXY)),
    ]
    container["ports"] = [
        {"name": "exportproxy", "protocol": "TCP", "containerPort": 8443},
        metrics_container_port(),
    ]
    container["readinessProbe"] = https_probe("/healthz", initialDelaySeconds=15, periodSeconds=10)
    container["resources"] = {"requests": {"cpu": "5m", "memory": "150Mi"}}
    return deployment


def pod_disruption_budget(deployment: JSON) -> JSON | None:
    """Keeps all but one replica up during voluntary disruptions; a single replica gets none."""
    name = deployment["metadata"]["name"]
    min_available = deployment["spec"]["replicas"] - 1
    if min_available < 1:
        return None
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {
            "name": f"{name}-pdb",
            "namespace": deployment["metadata"]["namespace"],
            "labels": {APP_LABEL: f"{name}-pdb"},
        },
        "spec": {
            "minAvailable": min_available,
            "selector": {"matchLabels": dict(deployment["spec"]["selector"]["matchLabels"])},
        },
    }
