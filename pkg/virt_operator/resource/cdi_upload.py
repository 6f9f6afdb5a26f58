"""The upload path of the project's DataVolume importer, laid out with CDI v1.63's names
(``pkg/operator/resources/{namespaced,cluster}/{apiserver,uploadproxy}.go``):

- ``cdi-apiserver`` behind the Service ``cdi-api`` and the APIService ``v1beta1.upload.cdi.kubevirt.io``:
  it answers UploadTokenRequests, signing tokens with the key it keeps in the Secret
  ``cdi-api-signing-key`` (which it makes itself); the MutatingWebhookConfiguration
  ``cdi-api-datavolume-mutate`` sends it every DataVolume created or updated, to authorize clones as the
  requesting user and add the clone token (signed with the same key);
- ``cdi-uploadproxy`` behind the Service ``cdi-uploadproxy``: it checks a token with the public half
  of that key and passes the upload on to the claim's upload server, as the client the upload server
  trusts.

Only what the upload API and the DataVolume mutating webhook need of CDI's rules is granted: CDI's
apiserver also serves validating webhooks, which the project's does not. Secrets are granted by name.
"""

from __future__ import annotations

import base64
from typing import Final

from kubevirt.virt_operator.resource.cdi_objects import (
    HTTPS_PORT,
    READ,
    account_subject,
    binding,
    cluster_role,
    config_map_volume,
    container_security,
    deployment,
    https_probe,
    https_service,
    named_rule,
    role,
    secret_volume,
    service_account,
)
from kubevirt.virt_operator.resource.config import InstallConfig
from kubevirt.virt_operator.resource.rbac import Rule, rules
from kubevirt_api.cdi.constants import CDI_NAMESPACE, GROUP, UPLOAD_GROUP, VERSION, Label, Upload
from kubevirt_api.view import JSON

CDI_APISERVER: Final = Upload.APISERVER  # image, binary, Deployment, ServiceAccount and roles
CDI_UPLOADPROXY: Final = Upload.PROXY  # image, binary, Deployment, Service, ServiceAccount and roles
API_SERVICE_NAME: Final = f"{VERSION}.{UPLOAD_GROUP}"
# CDI's DataVolume mutating webhook (pkg/operator/resources/cluster/apiserver.go).
DATAVOLUME_MUTATE_CONFIGURATION: Final = "cdi-api-datavolume-mutate"
DATAVOLUME_MUTATE_WEBHOOK: Final = f"datavolume-mutate.{GROUP}"
DATAVOLUME_MUTATE_PATH: Final = "/datavolume-mutate"
DATAVOLUME_MUTATE_TIMEOUT_SECONDS: Final = 30
# What the binaries read: every directory holds the Secret's tls.crt and tls.key (the bundle's
# ca-bundle.crt), and the flags say where.
APISERVER_CERT_DIR: Final = f"/var/run/certs/{Upload.APISERVER_SERVER_CERT}/"
APISERVER_SIGNER_BUNDLE_DIR: Final = f"/var/run/certs/{Upload.APISERVER_SIGNER_BUNDLE}/"
UPLOADPROXY_CERT_DIR: Final = f"/var/run/certs/{Upload.PROXY_SERVER_CERT}/"
UPLOADPROXY_CLIENT_CERT_DIR: Final = f"/var/run/certs/{Upload.CLIENT_CERT}/"
CERT_FILE: Final = "tls.crt"
KEY_FILE: Final = "tls.key"
PORT_FLAG: Final = "--port"
CERT_FILE_FLAG: Final = "--tls-cert-file"
KEY_FILE_FLAG: Final = "--tls-key-file"
CLIENT_CERT_FILE_FLAG: Final = "--client-cert-file"
CLIENT_KEY_FILE_FLAG: Final = "--client-key-file"
VERBOSITY_FLAG: Final = "-v"
# The token key's public half, PEM, for cdi-uploadproxy (CDI's variable).
APISERVER_PUBLIC_KEY_ENV: Final = "APISERVER_PUBLIC_KEY"
_TLS_KEYS = (CERT_FILE, KEY_FILE)
_BUNDLE_KEY = "ca-bundle.crt"

# CDI's cluster rules for cdi-apiserver, less its validating webhooks': it authorizes each token request
# and each clone with SubjectAccessReviews, reads the front proxy's CA from kube-system's
# extension-apiserver-authentication ConfigMap, and reads a clone's source namespace and DataSource.
_APISERVER_CLUSTER_RULES: tuple[Rule, ...] = (
    (("authorization.k8s.io",), ("subjectaccessreviews",), ("create",)),
    (("",), ("configmaps",), READ),
    (("",), ("persistentvolumeclaims",), READ),
    (("",), ("namespaces",), ("get",)),
    ((GROUP,), ("datavolumes",), ("list", "get")),
    ((GROUP,), ("datasources",), ("get",)),
    ((GROUP,), ("cdis", "cdiconfigs"), READ),
)
_UPLOADPROXY_CLUSTER_RULES: tuple[Rule, ...] = (
    (("",), ("persistentvolumeclaims",), ("get",)),
    # Its TLS settings follow the CDIConfig's.
    ((GROUP,), ("cdiconfigs",), READ),
)


def _apiserver_namespaced_rules() -> list[JSON]:
    # Made on first start: a create cannot be limited to a name, reading it can.
    return [
        named_rule((("",), ("secrets",), READ), [Upload.SIGNING_KEY_SECRET]),
        *rules([(("",), ("secrets",), ("create",))]),
    ]


def _uploadproxy_namespaced_rules() -> list[JSON]:
    # The CAs the upload servers' certificates are checked against.
    return [named_rule((("",), ("configmaps",), READ), [Upload.SERVER_SIGNER_BUNDLE])]


def _component_rbac(name: str, cluster: tuple[Rule, ...], namespaced: list[JSON]) -> list[JSON]:
    """The ServiceAccount, its Role in CDI's namespace and its ClusterRole, each bound, all named as the
    component."""
    account = account_subject(name)
    return [
        service_account(name),
        role(name, CDI_NAMESPACE, namespaced),
        binding("Role", name, name, account, CDI_NAMESPACE),
        cluster_role(name, rules(cluster)),
        binding("ClusterRole", name, name, account),
    ]


def apiserver_rbac() -> list[JSON]:
    return _component_rbac(CDI_APISERVER, _APISERVER_CLUSTER_RULES, _apiserver_namespaced_rules())


def uploadproxy_rbac() -> list[JSON]:
    return _component_rbac(CDI_UPLOADPROXY, _UPLOADPROXY_CLUSTER_RULES, _uploadproxy_namespaced_rules())


def services() -> list[JSON]:
    """``cdi-api`` and ``cdi-uploadproxy``, 443 in front of 8443."""
    return [https_service(Upload.API_SERVICE, CDI_APISERVER), https_service(Upload.PROXY, CDI_UPLOADPROXY)]


def api_service(ca_bundle: bytes | None) -> JSON:
    """The upload API behind ``cdi-api``, trusted through cdi-apiserver's signer bundle (absent until the
    operator has issued it)."""
    spec: JSON = {
        "service": {"namespace": CDI_NAMESPACE, "name": Upload.API_SERVICE, "port": 443},
        "group": UPLOAD_GROUP,
        "version": VERSION,
        "groupPriorityMinimum": 1000,
        "versionPriority": 15,
    }
    if ca_bundle is not None:
        spec["caBundle"] = base64.b64encode(ca_bundle).decode()
    return {
        "apiVersion": "apiregistration.k8s.io/v1",
        "kind": "APIService",
        "metadata": {"name": API_SERVICE_NAME, "labels": {Label.COMPONENT: Upload.API_SERVICE}},
        "spec": spec,
    }


def datavolume_mutating_webhook(ca_bundle: bytes | None) -> JSON:
    """``cdi-api-datavolume-mutate``: DataVolume creates and updates go to cdi-apiserver's
    ``/datavolume-mutate`` behind ``cdi-api``, trusted through its signer bundle (absent until the
    operator has issued it), failing closed as CDI's does."""
    client_config: JSON = {
        "service": {
            "namespace": CDI_NAMESPACE,
            "name": Upload.API_SERVICE,
            "path": DATAVOLUME_MUTATE_PATH,
            "port": 443,
        }
    }
    if ca_bundle is not None:
        client_config["caBundle"] = base64.b64encode(ca_bundle).decode()
    webhook: JSON = {
        "name": DATAVOLUME_MUTATE_WEBHOOK,
        "rules": [
            {
                "operations": ["CREATE", "UPDATE"],
                "apiGroups": [GROUP],
                "apiVersions": [VERSION],
                "resources": ["datavolumes"],
                "scope": "*",
            }
        ],
        "clientConfig": client_config,
        "failurePolicy": "Fail",
        "sideEffects": "None",
        "matchPolicy": "Exact",
        "namespaceSelector": {},
        "objectSelector": {},
        "timeoutSeconds": DATAVOLUME_MUTATE_TIMEOUT_SECONDS,
        "admissionReviewVersions": ["v1", "v1beta1"],
        "reinvocationPolicy": "Never",
    }
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration",
        "metadata": {
            "name": DATAVOLUME_MUTATE_CONFIGURATION,
            "labels": {Label.COMPONENT: Upload.API_SERVICE},
        },
        "webhooks": [webhook],
    }


def _container(config: InstallConfig, name: str, args: list[str]) -> JSON:
    return {
        "name": name,
        "image": config.image(name),
        "imagePullPolicy": config.pull_policy,
        "command": [name],
        "args": [*args, VERBOSITY_FLAG, str(config.verbosity_of(name))],
        "ports": [{"name": name, "protocol": "TCP", "containerPort": HTTPS_PORT}],
        "readinessProbe": https_probe(Upload.HEALTHZ),
        "resources": {"requests": {"cpu": "10m", "memory": "150Mi"}},
        "securityContext": container_security(),
        "terminationMessagePolicy": "FallbackToLogsOnError",
    }


def _mount(name: str, path: str) -> JSON:
    return {"name": name, "mountPath": path, "readOnly": True}


def apiserver_deployment(config: InstallConfig) -> JSON:
    container = _container(
        config,
        CDI_APISERVER,
        [
            PORT_FLAG,
            str(HTTPS_PORT),
            CERT_FILE_FLAG,
            APISERVER_CERT_DIR + CERT_FILE,
            KEY_FILE_FLAG,
            APISERVER_CERT_DIR + KEY_FILE,
        ],
    )
    container["volumeMounts"] = [
        _mount("ca-bundle", APISERVER_SIGNER_BUNDLE_DIR),
        _mount("server-cert", APISERVER_CERT_DIR),
    ]
    volumes = [
        config_map_volume("ca-bundle", Upload.APISERVER_SIGNER_BUNDLE, (_BUNDLE_KEY,)),
        secret_volume("server-cert", Upload.APISERVER_SERVER_CERT, _TLS_KEYS),
    ]
    return deployment(config, CDI_APISERVER, CDI_APISERVER, container, volumes)


def uploadproxy_deployment(config: InstallConfig) -> JSON:
    container = _container(
        config,
        CDI_UPLOADPROXY,
        [
            PORT_FLAG,
            str(HTTPS_PORT),
            CERT_FILE_FLAG,
            UPLOADPROXY_CERT_DIR + CERT_FILE,
            KEY_FILE_FLAG,
            UPLOADPROXY_CERT_DIR + KEY_FILE,
            CLIENT_CERT_FILE_FLAG,
            UPLOADPROXY_CLIENT_CERT_DIR + CERT_FILE,
            CLIENT_KEY_FILE_FLAG,
            UPLOADPROXY_CLIENT_CERT_DIR + KEY_FILE,
        ],
    )
    # The pod starts once cdi-apiserver has made its key.
    key = {"name": Upload.SIGNING_KEY_SECRET, "key": Upload.PUBLIC_KEY}
    container["env"] = [{"name": APISERVER_PUBLIC_KEY_ENV, "valueFrom": {"secretKeyRef": key}}]
    container["volumeMounts"] = [
        _mount("server-cert", UPLOADPROXY_CERT_DIR),
        _mount("client-cert", UPLOADPROXY_CLIENT_CERT_DIR),
    ]
    volumes = [
        secret_volume("server-cert", Upload.PROXY_SERVER_CERT, _TLS_KEYS),
        secret_volume("client-cert", Upload.CLIENT_CERT, _TLS_KEYS),
    ]
    return deployment(config, CDI_UPLOADPROXY, CDI_UPLOADPROXY, container, volumes)


def install_set(config: InstallConfig, ca_bundle: bytes | None) -> list[JSON]:
    """Who the two servers are and what they may do, their Services, the APIService and the DataVolume
    webhook (both trusting ``ca_bundle``, cdi-apiserver's signer bundle), then the Deployments."""
    return [
        *apiserver_rbac(),
        *uploadproxy_rbac(),
        *services(),
        api_service(ca_bundle),
        datavolume_mutating_webhook(ca_bundle),
        apiserver_deployment(config),
        uploadproxy_deployment(config),
    ]
