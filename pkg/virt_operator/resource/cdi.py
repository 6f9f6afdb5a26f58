"""The project's DataVolume importer as virt-operator installs it under the ``DataImporter`` gate, laid out
with CDI v1.63's names (``pkg/operator/resources``): the ``cdi.kubevirt.io`` CRDs, the ``cdi`` namespace,
the controller's ServiceAccount ``cdi-sa`` with its RBAC, the ``cdi-deployment`` Deployment, and the
aggregated ``cdi.kubevirt.io:*`` ClusterRoles that let namespace users work with DataVolumes.

What outlives the gate (:func:`outlives_the_controller`): the CRDs (removing one would delete every
DataVolume, and with it the claims they own), the user-facing ClusterRoles that keep those DataVolumes
reachable, and the namespace; only the controller goes. What outlives KubeVirt's uninstall
(:func:`outlives_the_install`): what holds data, the CRDs and the namespace; the user roles go with the
rest of the installation's RBAC.
"""

from __future__ import annotations

import copy
import functools
from typing import Final

from kubevirt.virt_operator.resource.config import InstallConfig
from kubevirt.virt_operator.resource.deployments import NON_ROOT_POD, PRIORITY_CLASS
from kubevirt.virt_operator.resource.rbac import RBAC_API_VERSION, Rule, rules
from kubevirt_api.cdi.constants import (
    API_VERSION,
    CDI_NAMESPACE,
    CONTROLLER_LEASE,
    GROUP,
    HONOR_WAIT_FOR_FIRST_CONSUMER,
    PROMETHEUS_LABEL,
    UPLOAD_GROUP,
    Annotation,
    Label,
)
from kubevirt_api.cdi.crds import CDI_CRDS, cdi_custom_resource_definition
from kubevirt_api.core.v1.constants import APP_LABEL_PREFIX, MANAGED_BY_LABEL_OPERATOR_VALUE
from kubevirt_api.view import JSON

CDI_CONTROLLER: Final = "cdi-controller"  # the controller's image and binary
CDI_IMPORTER: Final = "cdi-importer"  # the image of the importer-<claim> pods
CONTROLLER_DEPLOYMENT: Final = "cdi-deployment"
SERVICE_ACCOUNT: Final = "cdi-sa"
CONTROLLER_CLUSTER_ROLE: Final = "cdi"
CDI_CR_NAME: Final = "cdi"
CONFIG_READER: Final = "cdi.kubevirt.io:config-reader"
HEALTH_PORT: Final = 8080  # cdi-controller's plain-HTTP /healthz and /readyz
# CDI's WaitForFirstConsumer handling: a claim of a WFFC class binds once a VM's pod uses it.
_READ = ("get", "list", "watch")
_RBAC_GROUP = "rbac.authorization.k8s.io"

# CDI's rules for cdi-sa, less what the project's controller does not do (clone, upload, populators,
# OpenShift): it reads Secrets and ConfigMaps of a DataVolume's source only through the importer pod's
# volumes and environment, so it needs no read on them.
_CONTROLLER_CLUSTER_RULES: tuple[Rule, ...] = (
    (("",), ("events",), ("create", "patch")),
    (("",), ("persistentvolumeclaims",), ("get", "list", "watch", "create", "update", "delete", "patch")),
    # OwnerReferencesPermissionEnforcement: the claim owns its importer pod and the DataVolume its claim.
    (("",), ("persistentvolumeclaims/finalizers", "pods/finalizers"), ("update",)),
    (("",), ("pods",), ("get", "list", "watch", "create", "delete")),
    (("storage.k8s.io",), ("storageclasses",), _READ),
    (("snapshot.storage.k8s.io",), ("volumesnapshotclasses",), _READ),
    (("apiextensions.k8s.io",), ("customresourcedefinitions",), _READ),
    ((GROUP,), ("*",), ("*",)),
)
# cdi-controller's leader Lease. It lives in KubeVirt's install namespace, where the operator holds the
# leases it may grant: in the importer's namespace it holds none, and granting there would need them
# cluster-wide. Only this Lease can be read and renewed (a create cannot be limited to a name).
LEADER_LEASE: Final = CONTROLLER_LEASE
_LEASES = "leases"
_USER_RESOURCES = (
    "datavolumes",
    "dataimportcrons",
    "datasources",
    "volumeimportsources",
    "volumeuploadsources",
    "volumeclonesources",
)
# CDI's aggregated roles (cluster/rbac.go); the upload rules stand ready for the upload API.
_ADMIN_RULES: tuple[Rule, ...] = (
    ((GROUP,), _USER_RESOURCES, ("*",)),
    ((GROUP,), ("datavolumes/source",), ("create",)),
    ((UPLOAD_GROUP,), ("uploadtokenrequests",), ("*",)),
)
_VIEW_RULES: tuple[Rule, ...] = (
    (
        (GROUP,),
        (
            "cdiconfigs",
            "dataimportcrons",
            "datasources",
            "datavolumes",
            "objecttransfers",
            "storageprofiles",
            "volumeimportsources",
            "volumeuploadsources",
            "volumeclonesources",
        ),
        _READ,
    ),
    ((GROUP,), ("datavolumes/source",), ("create",)),
)
# virtctl reads the CDIConfig (the upload proxy's URL) and StorageProfiles as any user.
_CONFIG_READER_RULES: tuple[Rule, ...] = (((GROUP,), ("cdiconfigs", "storageprofiles"), _READ),)


def _labels(**extra: str) -> dict[str, str]:
    """CDI's common labels (the operator adds its own when it stamps the object)."""
    return {Label.COMPONENT: "", Label.APP: Label.APP_VALUE, **extra}


def _metadata(name: str, namespace: str | None = None) -> JSON:
    metadata: JSON = {"name": name, "labels": _labels()}
    if namespace is not None:
        metadata["namespace"] = namespace
    return metadata


@functools.cache
def _crds() -> tuple[JSON, ...]:
    return tuple(cdi_custom_resource_definition(kind) for kind in CDI_CRDS)


def crds() -> list[JSON]:
    return [copy.deepcopy(crd) for crd in _crds()]


def crd_names() -> list[str]:
    """The names of the CRDs installed here (without building their schemas): one of them without the
    operator's label is CDI's."""
    return [f"{facts.plural}.{facts.group}" for facts in CDI_CRDS.values()]


def namespace() -> JSON:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": _metadata(CDI_NAMESPACE)}


def _cluster_role(name: str, table: tuple[Rule, ...], aggregate_to: str | None = None) -> JSON:
    metadata = _metadata(name)
    if aggregate_to is not None:
        metadata["labels"][f"{_RBAC_GROUP}/aggregate-to-{aggregate_to}"] = "true"
    return {
        "apiVersion": RBAC_API_VERSION,
        "kind": "ClusterRole",
        "metadata": metadata,
        "rules": rules(table),
    }


def _binding(kind: str, name: str, role: str, subjects: list[JSON], namespace: str | None = None) -> JSON:
    return {
        "apiVersion": RBAC_API_VERSION,
        "kind": f"{kind}Binding",
        "metadata": _metadata(name, namespace),
        "roleRef": {"apiGroup": _RBAC_GROUP, "kind": kind, "name": role},
        "subjects": subjects,
    }


def _lease_rules() -> list[JSON]:
    create, renew = rules(
        [
            (("coordination.k8s.io",), (_LEASES,), ("create",)),
            (("coordination.k8s.io",), (_LEASES,), ("get", "update")),
        ]
    )
    renew["resourceNames"] = [LEADER_LEASE]
    return [create, renew]


def controller_rbac(install_namespace: str) -> list[JSON]:
    """cdi-sa, its Role for the leader Lease (in ``install_namespace``) and its ClusterRole, bound (CDI's
    names)."""
    account = [{"kind": "ServiceAccount", "name": SERVICE_ACCOUNT, "namespace": CDI_NAMESPACE}]
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _metadata(SERVICE_ACCOUNT, CDI_NAMESPACE)},
        {
            "apiVersion": RBAC_API_VERSION,
            "kind": "Role",
            "metadata": _metadata(CONTROLLER_DEPLOYMENT, install_namespace),
            "rules": _lease_rules(),
        },
        _binding("Role", CONTROLLER_DEPLOYMENT, CONTROLLER_DEPLOYMENT, account, install_namespace),
        _cluster_role(CONTROLLER_CLUSTER_ROLE, _CONTROLLER_CLUSTER_RULES),
        _binding("ClusterRole", SERVICE_ACCOUNT, CONTROLLER_CLUSTER_ROLE, account),
    ]


def user_roles() -> list[JSON]:
    """The aggregated admin/edit/view roles and the config reader every user and service account holds."""
    groups = [
        {"kind": "Group", "apiGroup": _RBAC_GROUP, "name": "system:authenticated"},
        {"kind": "Group", "apiGroup": _RBAC_GROUP, "name": "system:serviceaccount"},
    ]
    return [
        _cluster_role("cdi.kubevirt.io:admin", _ADMIN_RULES, "admin"),
        _cluster_role("cdi.kubevirt.io:edit", _ADMIN_RULES, "edit"),
        _cluster_role("cdi.kubevirt.io:view", _VIEW_RULES, "view"),
        _cluster_role(CONFIG_READER, _CONFIG_READER_RULES),
        _binding("ClusterRole", CONFIG_READER, CONFIG_READER, groups),
    ]


def _http_probe(path: str, **timing: int) -> JSON:
    return {"httpGet": {"scheme": "HTTP", "port": HEALTH_PORT, "path": path}, **timing}


def controller_deployment(config: InstallConfig) -> JSON:
    """``cdi-deployment``: one replica (CDI's default; the Lease elects a leader anyway), the importer
    image and pull policy passed on for the worker pods."""
    selector = {Label.COMPONENT: CONTROLLER_DEPLOYMENT}
    labels = _labels(**selector, **{PROMETHEUS_LABEL: "true"})
    container: JSON = {
        "name": CONTROLLER_DEPLOYMENT,
        "image": config.image(CDI_CONTROLLER),
        "imagePullPolicy": config.pull_policy,
        "command": [CDI_CONTROLLER],
        "args": [
            "--importer-image",
            config.image(CDI_IMPORTER),
            "--pull-policy",
            config.pull_policy,
            "--health-port",
            str(HEALTH_PORT),
            "--namespace",  # of the leader Lease
            config.namespace,
            "-v",
            str(config.verbosity_of(CDI_CONTROLLER)),
        ],
        "ports": [{"name": "health", "protocol": "TCP", "containerPort": HEALTH_PORT}],
        "livenessProbe": _http_probe(
            "/healthz", initialDelaySeconds=15, timeoutSeconds=10, failureThreshold=8
        ),
        # Ready once its caches are synced (only the leader's are).
        "readinessProbe": _http_probe("/readyz", initialDelaySeconds=2, periodSeconds=5),
        "resources": {"requests": {"cpu": "10m", "memory": "150Mi"}},
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "capabilities": {"drop": ["ALL"]},
            "seccompProfile": {"type": "RuntimeDefault"},
            "runAsNonRoot": True,
        },
        "terminationMessagePolicy": "FallbackToLogsOnError",
    }
    affinity_term = {
        "labelSelector": {
            "matchExpressions": [
                {"key": Label.COMPONENT, "operator": "In", "values": [CONTROLLER_DEPLOYMENT]}
            ]
        },
        "topologyKey": "kubernetes.io/hostname",
    }
    pod: JSON = {
        "priorityClassName": PRIORITY_CLASS,
        "serviceAccountName": SERVICE_ACCOUNT,
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
    if config.pull_secrets:
        # By name, as for the other components: the Secrets must exist in this namespace too.
        pod["imagePullSecrets"] = [{"name": secret} for secret in config.pull_secrets]
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": CONTROLLER_DEPLOYMENT, "namespace": CDI_NAMESPACE, "labels": dict(labels)},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": selector},
            # Ready means leading with synced caches, which a second pod never is while the first holds the
            # Lease: a rolling update would wait for it forever.
            "strategy": {"type": "Recreate"},
            "template": {
                "metadata": {
                    "labels": labels,
                    "annotations": {"openshift.io/required-scc": "restricted-v2"},
                },
                "spec": pod,
            },
        },
    }


def install_set(config: InstallConfig) -> list[JSON]:
    """Every object the operator keeps as it says, in the strategy's order (API types first)."""
    return [
        *crds(),
        namespace(),
        *controller_rbac(config.namespace),
        *user_roles(),
        controller_deployment(config),
    ]


@functools.cache
def _holding_data() -> frozenset[tuple[str, str]]:
    return _identities([*_crds(), namespace()])


@functools.cache
def _outliving_the_gate() -> frozenset[tuple[str, str]]:
    return _holding_data() | _identities(user_roles())


def _identities(objects: list[JSON]) -> frozenset[tuple[str, str]]:
    return frozenset((obj["kind"], obj["metadata"]["name"]) for obj in objects)


def _identity(obj: JSON) -> tuple[str, str]:
    metadata = obj.get("metadata") or {}
    return obj.get("kind", ""), metadata.get("name", "")


def outlives_the_controller(obj: JSON) -> bool:
    """Whether a managed object stays when the gate is turned off: the API and who may use it stay with
    the users' DataVolumes, the controller and its RBAC go."""
    return _identity(obj) in _outliving_the_gate()


def outlives_the_install(obj: JSON) -> bool:
    """Whether a managed object stays when KubeVirt is uninstalled: what holds the users' DataVolumes."""
    return _identity(obj) in _holding_data()


def cdi_cr() -> JSON:
    """The CDI object KubeVirt reads (it wants exactly one), created when there is none and from then on
    the users': ``spec.config`` is theirs to edit, as with CDI. The config authority annotation makes it
    the source of the CDIConfig's settings."""
    return {
        "apiVersion": API_VERSION,
        "kind": "CDI",
        "metadata": {
            "name": CDI_CR_NAME,
            "labels": {f"{APP_LABEL_PREFIX}/managed-by": MANAGED_BY_LABEL_OPERATOR_VALUE},
            "annotations": {Annotation.CONFIG_AUTHORITY: ""},
        },
        "spec": {"config": {"featureGates": [HONOR_WAIT_FOR_FIRST_CONSUMER]}},
    }
