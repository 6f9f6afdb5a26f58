"""The project's DataVolume importer as virt-operator installs it under the ``DataImporter`` gate, laid out
with CDI v1.63's names (``pkg/operator/resources``): the ``cdi.kubevirt.io`` CRDs, the ``cdi`` namespace,
the controller's ServiceAccount ``cdi-sa`` with its RBAC, the ``cdi-deployment`` Deployment, the
aggregated ``cdi.kubevirt.io:*`` ClusterRoles that let namespace users work with DataVolumes, and the
upload path (:mod:`kubevirt.virt_operator.resource.cdi_upload`; its certificates are issued by
:mod:`kubevirt.virt_operator.cdi_certificates`).

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

from kubevirt.virt_operator.resource import cdi_upload
from kubevirt.virt_operator.resource.cdi_objects import (
    RBAC_GROUP,
    account_subject,
    binding,
    cluster_role,
    config_map_volume,
    container_security,
    deployment,
    metadata,
    named_rule,
    role,
    secret_volume,
    service_account,
)
from kubevirt.virt_operator.resource.config import InstallConfig
from kubevirt.virt_operator.resource.rbac import Rule, rules
from kubevirt_api.cdi.constants import (
    API_VERSION,
    CDI_NAMESPACE,
    CONTROLLER_LEASE,
    GROUP,
    HONOR_WAIT_FOR_FIRST_CONSUMER,
    PROMETHEUS_LABEL,
    UPLOAD_GROUP,
    Annotation,
    Upload,
)
from kubevirt_api.cdi.crds import CDI_CRDS, cdi_custom_resource_definition
from kubevirt_api.core.v1.constants import APP_LABEL_PREFIX, MANAGED_BY_LABEL_OPERATOR_VALUE
from kubevirt_api.view import JSON

CDI_CONTROLLER: Final = "cdi-controller"  # the controller's image and binary
CDI_IMPORTER: Final = "cdi-importer"  # the image of the importer-<claim> pods
CDI_UPLOADSERVER: Final = "cdi-uploadserver"  # the image of the cdi-upload-<claim> pods
CDI_CLONER: Final = "cdi-cloner"  # the image of the clone source pods
CONTROLLER_DEPLOYMENT: Final = "cdi-deployment"
SERVICE_ACCOUNT: Final = "cdi-sa"
CONTROLLER_CLUSTER_ROLE: Final = "cdi"
# cdi-sa's Role in CDI's namespace (CDI's is named as the Deployment, a name this project's Role for the
# leader Lease already has in the install namespace).
SIGNERS_ROLE: Final = "cdi-deployment-signers"
CDI_CR_NAME: Final = "cdi"
CONFIG_READER: Final = "cdi.kubevirt.io:config-reader"
HEALTH_PORT: Final = 8080  # cdi-controller's plain-HTTP /healthz and /readyz
# The controller's environment (CDI's variables).
UPLOADSERVER_IMAGE_ENV: Final = "UPLOADSERVER_IMAGE"
CLONER_IMAGE_ENV: Final = "CLONER_IMAGE"
UPLOADPROXY_SERVICE_ENV: Final = "UPLOADPROXY_SERVICE"
# Where cdi-deployment finds the signers of the upload servers' certificates and of the proxy's client
# certificate (tls.crt, tls.key), and their bundles (ca-bundle.crt): CDI's paths.
UPLOADSERVER_SIGNER_DIR: Final = f"/var/run/certs/{Upload.SERVER_SIGNER}/"
UPLOADSERVER_CLIENT_SIGNER_DIR: Final = f"/var/run/certs/{Upload.CLIENT_SIGNER}/"
UPLOADSERVER_SIGNER_BUNDLE_DIR: Final = f"/var/run/ca-bundle/{Upload.SERVER_SIGNER_BUNDLE}/"
UPLOADSERVER_CLIENT_SIGNER_BUNDLE_DIR: Final = f"/var/run/ca-bundle/{Upload.CLIENT_SIGNER_BUNDLE}/"
_READ = ("get", "list", "watch")

# CDI's rules for cdi-sa, less what the project's controller does not do (clone, populators, OpenShift):
# it reads Secrets and ConfigMaps of a DataVolume's source only through the importer pod's volumes and
# environment, so it needs no read on them. An upload pod's Service is its own, and so is the Secret with
# its certificate (owned by the pod, collected with it: CDI grants only the create).
_CONTROLLER_CLUSTER_RULES: tuple[Rule, ...] = (
    (("",), ("events",), ("create", "patch")),
    (("",), ("persistentvolumeclaims",), ("get", "list", "watch", "create", "update", "delete", "patch")),
    # OwnerReferencesPermissionEnforcement: the claim owns its importer pod and the DataVolume its claim.
    (("",), ("persistentvolumeclaims/finalizers", "pods/finalizers"), ("update",)),
    (("",), ("pods", "services"), ("get", "list", "watch", "create", "delete")),
    (("",), ("secrets",), ("create",)),
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
# CDI's aggregated roles (cluster/rbac.go).
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
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": metadata(CDI_NAMESPACE)}


def _lease_rules() -> list[JSON]:
    create, renew = rules(
        [
            (("coordination.k8s.io",), (_LEASES,), ("create",)),
            (("coordination.k8s.io",), (_LEASES,), ("get", "update")),
        ]
    )
    renew["resourceNames"] = [LEADER_LEASE]
    return [create, renew]


def _signer_rules() -> list[JSON]:
    """The upload signers and their bundles, by name: CDI's controller reads the bundles from the API; and
    cdi-apiserver's token key, which checks the clone tokens and signs the controller's own."""
    return [
        named_rule(
            (("",), ("secrets",), _READ),
            [Upload.SERVER_SIGNER, Upload.CLIENT_SIGNER, Upload.SIGNING_KEY_SECRET],
        ),
        named_rule(
            (("",), ("configmaps",), _READ), [Upload.SERVER_SIGNER_BUNDLE, Upload.CLIENT_SIGNER_BUNDLE]
        ),
    ]


def controller_rbac(install_namespace: str) -> list[JSON]:
    """cdi-sa, its Role for the leader Lease (in ``install_namespace``), its Role for the upload signers
    (in CDI's namespace) and its ClusterRole, bound (CDI's names)."""
    account = account_subject(SERVICE_ACCOUNT)
    return [
        service_account(SERVICE_ACCOUNT),
        role(CONTROLLER_DEPLOYMENT, install_namespace, _lease_rules()),
        binding("Role", CONTROLLER_DEPLOYMENT, CONTROLLER_DEPLOYMENT, account, install_namespace),
        role(SIGNERS_ROLE, CDI_NAMESPACE, _signer_rules()),
        binding("Role", SIGNERS_ROLE, SIGNERS_ROLE, account, CDI_NAMESPACE),
        cluster_role(CONTROLLER_CLUSTER_ROLE, rules(_CONTROLLER_CLUSTER_RULES)),
        binding("ClusterRole", SERVICE_ACCOUNT, CONTROLLER_CLUSTER_ROLE, account),
    ]


def user_roles() -> list[JSON]:
    """The aggregated admin/edit/view roles and the config reader every user and service account holds."""
    groups = [
        {"kind": "Group", "apiGroup": RBAC_GROUP, "name": "system:authenticated"},
        {"kind": "Group", "apiGroup": RBAC_GROUP, "name": "system:serviceaccount"},
    ]
    return [
        cluster_role("cdi.kubevirt.io:admin", rules(_ADMIN_RULES), "admin"),
        cluster_role("cdi.kubevirt.io:edit", rules(_ADMIN_RULES), "edit"),
        cluster_role("cdi.kubevirt.io:view", rules(_VIEW_RULES), "view"),
        cluster_role(CONFIG_READER, rules(_CONFIG_READER_RULES)),
        binding("ClusterRole", CONFIG_READER, CONFIG_READER, groups),
    ]


def _http_probe(path: str, **timing: int) -> JSON:
    return {"httpGet": {"scheme": "HTTP", "port": HEALTH_PORT, "path": path}, **timing}


_SIGNER_VOLUMES = (
    ("uploadserver-ca-cert", Upload.SERVER_SIGNER, UPLOADSERVER_SIGNER_DIR),
    ("uploadserver-client-ca-cert", Upload.CLIENT_SIGNER, UPLOADSERVER_CLIENT_SIGNER_DIR),
)
_BUNDLE_VOLUMES = (
    ("uploadserver-ca-bundle", Upload.SERVER_SIGNER_BUNDLE, UPLOADSERVER_SIGNER_BUNDLE_DIR),
    ("uploadserver-client-ca-bundle", Upload.CLIENT_SIGNER_BUNDLE, UPLOADSERVER_CLIENT_SIGNER_BUNDLE_DIR),
)


def controller_deployment(config: InstallConfig) -> JSON:
    """``cdi-deployment``: one replica (CDI's default; the Lease elects a leader anyway), the worker
    images and pull policy passed on for the worker pods, the upload signers mounted as CDI mounts
    them."""
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
        "env": [
            {"name": UPLOADSERVER_IMAGE_ENV, "value": config.image(CDI_UPLOADSERVER)},
            {"name": CLONER_IMAGE_ENV, "value": config.image(CDI_CLONER)},
            {"name": UPLOADPROXY_SERVICE_ENV, "value": Upload.PROXY},
        ],
        "ports": [{"name": "health", "protocol": "TCP", "containerPort": HEALTH_PORT}],
        "livenessProbe": _http_probe(
            "/healthz", initialDelaySeconds=15, timeoutSeconds=10, failureThreshold=8
        ),
        # Ready once its caches are synced (only the leader's are).
        "readinessProbe": _http_probe("/readyz", initialDelaySeconds=2, periodSeconds=5),
        "resources": {"requests": {"cpu": "10m", "memory": "150Mi"}},
        "securityContext": container_security(),
        "terminationMessagePolicy": "FallbackToLogsOnError",
        "volumeMounts": [
            {"name": volume, "mountPath": path, "readOnly": True}
            for volume, _source, path in (*_SIGNER_VOLUMES, *_BUNDLE_VOLUMES)
        ],
    }
    volumes = [
        *(secret_volume(volume, secret, ("tls.crt", "tls.key")) for volume, secret, _ in _SIGNER_VOLUMES),
        *(config_map_volume(volume, bundle, ("ca-bundle.crt",)) for volume, bundle, _ in _BUNDLE_VOLUMES),
    ]
    # Ready means leading with synced caches, which a second pod never is while the first holds the
    # Lease: a rolling update would wait for it forever.
    return deployment(
        config,
        CONTROLLER_DEPLOYMENT,
        SERVICE_ACCOUNT,
        container,
        volumes,
        extra_labels={PROMETHEUS_LABEL: "true"},
        strategy="Recreate",
    )


def install_set(config: InstallConfig, api_ca_bundle: bytes | None = None) -> list[JSON]:
    """Every object the operator keeps as it says, in the strategy's order (API types first);
    ``api_ca_bundle`` is cdi-apiserver's signer bundle, for the upload APIService."""
    return [
        *crds(),
        namespace(),
        *controller_rbac(config.namespace),
        *user_roles(),
        controller_deployment(config),
        *cdi_upload.install_set(config, api_ca_bundle),
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
    the users' DataVolumes, the controller, the upload servers and their RBAC go."""
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
