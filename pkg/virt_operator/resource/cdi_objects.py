"""Builders shared by the DataVolume importer's objects, with CDI v1.63's conventions
(``pkg/operator/resources/utils``): its common labels, the ``cdi.kubevirt.io=<component>`` selector of a
workload and its Service, and a pod spread over nodes that runs as non-root."""

from __future__ import annotations

from typing import Final

from kubevirt.virt_operator.resource.config import InstallConfig
from kubevirt.virt_operator.resource.deployments import NON_ROOT_POD, PRIORITY_CLASS
from kubevirt.virt_operator.resource.rbac import RBAC_API_VERSION, Rule, rules
from kubevirt_api.cdi.constants import CDI_NAMESPACE, Label
from kubevirt_api.view import JSON

RBAC_GROUP: Final = "rbac.authorization.k8s.io"
READ: Final = ("get", "list", "watch")
HTTPS_PORT: Final = 8443
# CDI mounts Secrets and ConfigMaps with the API's default mode.
DEFAULT_MODE: Final = 0o644


def labels(**extra: str) -> dict[str, str]:
    """CDI's common labels (the operator adds its own when it stamps the object)."""
    return {Label.COMPONENT: "", Label.APP: Label.APP_VALUE, **extra}


def metadata(name: str, namespace: str | None = None) -> JSON:
    meta: JSON = {"name": name, "labels": labels()}
    if namespace is not None:
        meta["namespace"] = namespace
    return meta


def service_account(name: str) -> JSON:
    return {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": metadata(name, CDI_NAMESPACE)}


def account_subject(name: str) -> list[JSON]:
    return [{"kind": "ServiceAccount", "name": name, "namespace": CDI_NAMESPACE}]


def cluster_role(name: str, policy: list[JSON], aggregate_to: str | None = None) -> JSON:
    meta = metadata(name)
    if aggregate_to is not None:
        meta["labels"][f"{RBAC_GROUP}/aggregate-to-{aggregate_to}"] = "true"
    return {"apiVersion": RBAC_API_VERSION, "kind": "ClusterRole", "metadata": meta, "rules": policy}


def role(name: str, namespace: str, policy: list[JSON]) -> JSON:
    return {
        "apiVersion": RBAC_API_VERSION,
        "kind": "Role",
        "metadata": metadata(name, namespace),
        "rules": policy,
    }


def binding(kind: str, name: str, role_name: str, subjects: list[JSON], namespace: str | None = None) -> JSON:
    return {
        "apiVersion": RBAC_API_VERSION,
        "kind": f"{kind}Binding",
        "metadata": metadata(name, namespace),
        "roleRef": {"apiGroup": RBAC_GROUP, "kind": kind, "name": role_name},
        "subjects": subjects,
    }


def named_rule(rule: Rule, names: list[str]) -> JSON:
    """One PolicyRule limited to the objects of these names."""
    (policy,) = rules([rule])
    policy["resourceNames"] = list(names)
    return policy


def https_service(name: str, component: str) -> JSON:
    """A ClusterIP Service on 443 in front of the component's pods' 8443."""
    selector = {Label.COMPONENT: component}
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": CDI_NAMESPACE, "labels": labels(**selector)},
        "spec": {
            "selector": selector,
            "ports": [{"port": 443, "targetPort": HTTPS_PORT, "protocol": "TCP"}],
            "type": "ClusterIP",
            "sessionAffinity": "None",
        },
    }


def secret_volume(name: str, secret: str, keys: tuple[str, ...]) -> JSON:
    items = [{"key": key, "path": key} for key in keys]
    return {"name": name, "secret": {"secretName": secret, "items": items, "defaultMode": DEFAULT_MODE}}


def config_map_volume(name: str, config_map: str, keys: tuple[str, ...]) -> JSON:
    items = [{"key": key, "path": key} for key in keys]
    return {"name": name, "configMap": {"name": config_map, "items": items, "defaultMode": DEFAULT_MODE}}


def container_security() -> JSON:
    return {
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
        "seccompProfile": {"type": "RuntimeDefault"},
        "runAsNonRoot": True,
    }


def https_probe(path: str) -> JSON:
    """CDI's readiness probe of its HTTPS servers."""
    return {
        "httpGet": {"scheme": "HTTPS", "port": HTTPS_PORT, "path": path},
        "initialDelaySeconds": 2,
        "periodSeconds": 5,
        "failureThreshold": 3,
        "successThreshold": 1,
        "timeoutSeconds": 1,
    }


def deployment(
    config: InstallConfig,
    component: str,
    account: str,
    container: JSON,
    volumes: list[JSON] | None = None,
    *,
    extra_labels: dict[str, str] | None = None,
    strategy: str = "RollingUpdate",
) -> JSON:
    """One replica of ``container`` in CDI's namespace, selected by ``cdi.kubevirt.io=<component>`` and
    preferably not beside another of its pods."""
    selector = {Label.COMPONENT: component}
    pod_labels = labels(**selector, **(extra_labels or {}))
    affinity_term = {
        "labelSelector": {
            "matchExpressions": [{"key": Label.COMPONENT, "operator": "In", "values": [component]}]
        },
        "topologyKey": "kubernetes.io/hostname",
    }
    pod: JSON = {
        "priorityClassName": PRIORITY_CLASS,
        "serviceAccountName": account,
        "securityContext": dict(NON_ROOT_POD),
        "nodeSelector": {"kubernetes.io/os": "linux"},
        "tolerations": [{"key": "CriticalAddonsOnly", "operator": "Exists"}],
        "affinity": {
            "podAntiAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 1, "podAffinityTerm": affinity_term}
                ]
            }
        },
        "containers": [container],
    }
    if volumes:
        pod["volumes"] = volumes
    if config.pull_secrets:
        # By name, as for the other components: the Secrets must exist in this namespace too.
        pod["imagePullSecrets"] = [{"name": secret} for secret in config.pull_secrets]
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": component, "namespace": CDI_NAMESPACE, "labels": dict(pod_labels)},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": selector},
            "strategy": {"type": strategy},
            "template": {
                "metadata": {
                    "labels": pod_labels,
                    "annotations": {"openshift.io/required-scc": "restricted-v2"},
                },
                "spec": pod,
            },
        },
    }
