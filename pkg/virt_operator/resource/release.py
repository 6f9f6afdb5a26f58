"""What KubeVirt publishes for installing: ``kubevirt-operator.yaml`` (the namespace, the KubeVirt CRD,
the operator's priority class, RBAC and Deployment) and ``kubevirt-cr.yaml`` (the CR that asks the
operator to install everything else). ``hack/generate`` writes them to ``manifests/release/``."""

from __future__ import annotations

from kubevirt.virt_operator.resource.config import DEFAULT_REPLICAS
from kubevirt.virt_operator.resource.deployments import NON_ROOT_POD, PRIORITY_CLASS
from kubevirt.virt_operator.resource.operator_rbac import OPERATOR_SERVICE_ACCOUNT, operator_rbac
from kubevirt.virt_operator.resource.services import PROMETHEUS_LABEL, metrics_container_port
from kubevirt.virt_operator.resource.strategy import kubevirt_crd
from kubevirt_api.core.v1.constants import APP_LABEL, APP_NAME
from kubevirt_api.view import JSON

VIRT_OPERATOR = "virt-operator"
OPERATOR_IMAGE_ENV = "VIRT_OPERATOR_IMAGE"
# The images hack/build-images makes are imported under this name; a real release names its registry.
DEFAULT_OPERATOR_IMAGE = "localhost/kubevirt/virt-operator:devel"
_RESTRICTED = {"type": "RuntimeDefault"}
_ALL_ON_KUBEVIRTS = ("get", "delete", "create", "update", "patch", "list", "watch", "deletecollection")


def namespace_object(namespace: str) -> JSON:
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            "name": namespace,
            "labels": {APP_LABEL: "", "pod-security.kubernetes.io/enforce": "privileged"},
        },
    }


def priority_class() -> JSON:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": PRIORITY_CLASS},
        "value": 1000000000,
        "globalDefault": False,
        "description": "This priority class should be used for core kubevirt components only.",
    }


def kubevirt_admin_role() -> JSON:
    """Lets namespace admins manage the KubeVirt CR itself."""
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {
            "name": "kubevirt.io:operator",
            "labels": {"operator.kubevirt.io": "", "rbac.authorization.k8s.io/aggregate-to-admin": "true"},
        },
        "rules": [
            {"apiGroups": ["kubevirt.io"], "resources": ["kubevirts"], "verbs": list(_ALL_ON_KUBEVIRTS)}
        ],
    }


def operator_deployment(
    namespace: str, image: str, *, pull_policy: str = "IfNotPresent", verbosity: int = 2
) -> JSON:
    probe = {
        "httpGet": {"scheme": "HTTPS", "port": 8443, "path": "/metrics"},
        "initialDelaySeconds": 5,
        "timeoutSeconds": 10,
    }
    container: JSON = {
        "name": VIRT_OPERATOR,
        "image": image,
        "imagePullPolicy": pull_policy,
        "command": [VIRT_OPERATOR],
        "args": ["--port", "8443", "-v", str(verbosity)],
        "ports": [
            metrics_container_port(),
            {"name": "webhooks", "protocol": "TCP", "containerPort": 8444},
        ],
        "livenessProbe": probe,
        "readinessProbe": probe,
        "env": [
            {"name": OPERATOR_IMAGE_ENV, "value": image},
            {"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
        ],
        "resources": {"requests": {"cpu": "10m", "memory": "450Mi"}},
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "capabilities": {"drop": ["ALL"]},
            "seccompProfile": _RESTRICTED,
        },
        "terminationMessagePolicy": "FallbackToLogsOnError",
    }
    affinity_term = {
        "labelSelector": {
            "matchExpressions": [{"key": APP_LABEL, "operator": "In", "values": [VIRT_OPERATOR]}]
        },
        "topologyKey": "kubernetes.io/hostname",
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": VIRT_OPERATOR, "namespace": namespace, "labels": {APP_LABEL: VIRT_OPERATOR}},
        "spec": {
            "replicas": DEFAULT_REPLICAS,
            "selector": {"matchLabels": {APP_LABEL: VIRT_OPERATOR}},
            "strategy": {"type": "RollingUpdate"},
            "template": {
                "metadata": {
                    "name": VIRT_OPERATOR,
                    "labels": {APP_LABEL: VIRT_OPERATOR, APP_NAME: VIRT_OPERATOR, PROMETHEUS_LABEL: "true"},
                    "annotations": {"openshift.io/required-scc": "restricted-v2"},
                },
                "spec": {
                    "priorityClassName": PRIORITY_CLASS,
                    "tolerations": [{"key": "CriticalAddonsOnly", "operator": "Exists"}],
                    "affinity": {
                        "podAntiAffinity": {
                            "preferredDuringSchedulingIgnoredDuringExecution": [
                                {"weight": 1, "podAffinityTerm": affinity_term}
                            ]
                        }
                    },
                    "serviceAccountName": OPERATOR_SERVICE_ACCOUNT,
                    "nodeSelector": {"kubernetes.io/os": "linux"},
                    "securityContext": dict(NON_ROOT_POD),
                    "containers": [container],
                },
            },
        },
    }


def operator_manifest(namespace: str = "kubevirt", image: str = DEFAULT_OPERATOR_IMAGE) -> list[JSON]:
    return [
        namespace_object(namespace),
        kubevirt_crd(),
        priority_class(),
        kubevirt_admin_role(),
        *operator_rbac(namespace),
        operator_deployment(namespace, image),
    ]


def kubevirt_cr(namespace: str = "kubevirt") -> JSON:
    return {
        "apiVersion": "kubevirt.io/v1",
        "kind": "KubeVirt",
        "metadata": {"name": "kubevirt", "namespace": namespace},
        "spec": {
            "certificateRotateStrategy": {},
            "configuration": {"developerConfiguration": {"featureGates": []}},
            "customizeComponents": {},
            "imagePullPolicy": "IfNotPresent",
            "workloadUpdateStrategy": {},
        },
    }
