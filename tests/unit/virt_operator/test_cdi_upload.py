"""The upload path virt-operator installs under the ``DataImporter`` gate, with CDI v1.63's names:
cdi-apiserver behind ``cdi-api`` and the upload APIService, cdi-uploadproxy behind its Service, their
RBAC, and what cdi-deployment gets for uploads."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from kubevirt.virt_operator.resource import cdi_upload
from kubevirt.virt_operator.resource.config import install_config
from kubevirt.virt_operator.resource.strategy import install_strategy
from kubevirt_api.core.v1.kubevirt import KubeVirt

JSON = dict[str, Any]
NS = "kubevirt"
READ = ["get", "list", "watch"]
UPLOAD_OBJECTS = {
    ("ServiceAccount", "cdi-apiserver"),
    ("Role", "cdi-apiserver"),
    ("RoleBinding", "cdi-apiserver"),
    ("ClusterRole", "cdi-apiserver"),
    ("ClusterRoleBinding", "cdi-apiserver"),
    ("ServiceAccount", "cdi-uploadproxy"),
    ("Role", "cdi-uploadproxy"),
    ("RoleBinding", "cdi-uploadproxy"),
    ("ClusterRole", "cdi-uploadproxy"),
    ("ClusterRoleBinding", "cdi-uploadproxy"),
    ("Service", "cdi-api"),
    ("Service", "cdi-uploadproxy"),
    ("APIService", "v1beta1.upload.cdi.kubevirt.io"),
    ("Deployment", "cdi-apiserver"),
    ("Deployment", "cdi-uploadproxy"),
    ("Role", "cdi-deployment-signers"),
    ("RoleBinding", "cdi-deployment-signers"),
}


def _installed(
    gates: list[str], bundle: bytes | None = b"CDI-CA", **spec: Any
) -> dict[tuple[str, str], JSON]:
    kv = KubeVirt.model_validate(
        {
            "apiVersion": "kubevirt.io/v1",
            "kind": "KubeVirt",
            "metadata": {"name": "kubevirt", "namespace": NS},
            "spec": {"configuration": {"developerConfiguration": {"featureGates": gates}}, **spec},
        }
    )
    config = install_config(kv, namespace=NS, operator_image="reg.test/kv/virt-operator:v1")
    objects = install_strategy(config, b"KV-CA", bundle)
    return {(obj["kind"], obj["metadata"]["name"]): obj for obj in objects}


@pytest.fixture(scope="module")
def installed() -> dict[tuple[str, str], JSON]:
    return _installed(["DataImporter"], imageRegistry="registry.test/kv", imageTag="v9")


def _rule(groups: list[str], resources: list[str], verbs: list[str], names: list[str] | None = None) -> JSON:
    rule: JSON = {"apiGroups": groups, "resources": resources, "verbs": verbs}
    if names is not None:
        rule["resourceNames"] = names
    return rule


def _container(deployment: JSON) -> JSON:
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    return dict(container)


def test_the_gate_installs_the_upload_path_and_only_the_gate() -> None:
    assert set(_installed(["DataImporter"])) >= UPLOAD_OBJECTS
    assert not UPLOAD_OBJECTS & set(_installed([]))


def test_every_namespaced_upload_object_lives_in_cdis_namespace(
    installed: dict[tuple[str, str], JSON],
) -> None:
    for key in UPLOAD_OBJECTS:
        namespace = installed[key]["metadata"].get("namespace")
        assert namespace == (
            "cdi" if key[0] not in ("ClusterRole", "ClusterRoleBinding", "APIService") else None
        )


@pytest.mark.parametrize(
    ("name", "image"),
    [
        ("cdi-apiserver", "registry.test/kv/cdi-apiserver:v9"),
        ("cdi-uploadproxy", "registry.test/kv/cdi-uploadproxy:v9"),
    ],
)
def test_the_servers_run_the_projects_images_with_cdis_labels(
    installed: dict[tuple[str, str], JSON], name: str, image: str
) -> None:
    deployment = installed[("Deployment", name)]
    selector = {"cdi.kubevirt.io": name}
    assert deployment["spec"]["selector"]["matchLabels"] == selector
    assert deployment["spec"]["replicas"] == 1
    for labels in (deployment["metadata"]["labels"], deployment["spec"]["template"]["metadata"]["labels"]):
        assert labels.items() >= {"app": "containerized-data-importer", **selector}.items()
    pod = deployment["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == name
    assert pod["securityContext"]["runAsNonRoot"] is True
    container = _container(deployment)
    assert container["image"] == image
    assert container["command"] == [name]
    assert container["ports"] == [{"name": name, "protocol": "TCP", "containerPort": 8443}]
    assert container["readinessProbe"]["httpGet"] == {"scheme": "HTTPS", "port": 8443, "path": "/healthz"}
    assert container["args"][-2:] == ["-v", "2"]


def _mounts(deployment: JSON) -> dict[str, tuple[str, JSON]]:
    """mount path → (volume name, volume source)."""
    pod = deployment["spec"]["template"]["spec"]
    volumes = {volume["name"]: volume for volume in pod["volumes"]}
    return {
        mount["mountPath"]: (mount["name"], volumes[mount["name"]])
        for mount in _container(deployment)["volumeMounts"]
    }


def _secret_of(volume: JSON) -> tuple[str, list[str]]:
    source = volume["secret"]
    return source["secretName"], [item["key"] for item in source["items"]]


def test_cdi_apiserver_serves_its_certificate_from_the_stated_files(
    installed: dict[tuple[str, str], JSON],
) -> None:
    deployment = installed[("Deployment", "cdi-apiserver")]
    assert cdi_upload.APISERVER_CERT_DIR == "/var/run/certs/cdi-apiserver-server-cert/"
    mounts = _mounts(deployment)
    _, cert = mounts[cdi_upload.APISERVER_CERT_DIR]
    assert _secret_of(cert) == ("cdi-apiserver-server-cert", ["tls.crt", "tls.key"])
    _, bundle = mounts["/var/run/certs/cdi-apiserver-signer-bundle/"]
    assert bundle["configMap"]["name"] == "cdi-apiserver-signer-bundle"
    assert [item["key"] for item in bundle["configMap"]["items"]] == ["ca-bundle.crt"]
    assert _container(deployment)["args"] == [
        "--port",
        "8443",
        "--tls-cert-file",
        "/var/run/certs/cdi-apiserver-server-cert/tls.crt",
        "--tls-key-file",
        "/var/run/certs/cdi-apiserver-server-cert/tls.key",
        "-v",
        "2",
    ]


def test_cdi_uploadproxy_has_the_token_key_and_both_certificates(
    installed: dict[tuple[str, str], JSON],
) -> None:
    deployment = installed[("Deployment", "cdi-uploadproxy")]
    container = _container(deployment)
    assert container["env"] == [
        {
            "name": "APISERVER_PUBLIC_KEY",
            "valueFrom": {"secretKeyRef": {"name": "cdi-api-signing-key", "key": "id_rsa.pub"}},
        }
    ]
    mounts = _mounts(deployment)
    assert _secret_of(mounts["/var/run/certs/cdi-uploadproxy-server-cert/"][1]) == (
        "cdi-uploadproxy-server-cert",
        ["tls.crt", "tls.key"],
    )
    assert _secret_of(mounts["/var/run/certs/cdi-uploadserver-client-cert/"][1]) == (
        "cdi-uploadserver-client-cert",
        ["tls.crt", "tls.key"],
    )
    assert container["args"] == [
        "--port",
        "8443",
        "--tls-cert-file",
        "/var/run/certs/cdi-uploadproxy-server-cert/tls.crt",
        "--tls-key-file",
        "/var/run/certs/cdi-uploadproxy-server-cert/tls.key",
        "--client-cert-file",
        "/var/run/certs/cdi-uploadserver-client-cert/tls.crt",
        "--client-key-file",
        "/var/run/certs/cdi-uploadserver-client-cert/tls.key",
        "-v",
        "2",
    ]


@pytest.mark.parametrize(
    ("name", "component"), [("cdi-api", "cdi-apiserver"), ("cdi-uploadproxy", "cdi-uploadproxy")]
)
def test_the_services_put_443_in_front_of_8443(
    installed: dict[tuple[str, str], JSON], name: str, component: str
) -> None:
    service = installed[("Service", name)]
    assert service["spec"]["selector"] == {"cdi.kubevirt.io": component}
    assert service["spec"]["ports"] == [{"port": 443, "targetPort": 8443, "protocol": "TCP"}]
    assert service["spec"]["type"] == "ClusterIP"


def test_the_upload_api_service_points_at_cdi_api_with_the_signers_bundle(
    installed: dict[tuple[str, str], JSON],
) -> None:
    spec = installed[("APIService", "v1beta1.upload.cdi.kubevirt.io")]["spec"]
    assert spec == {
        "service": {"namespace": "cdi", "name": "cdi-api", "port": 443},
        "group": "upload.cdi.kubevirt.io",
        "version": "v1beta1",
        "groupPriorityMinimum": 1000,
        "versionPriority": 15,
        "caBundle": base64.b64encode(b"CDI-CA").decode(),
    }
    # Until the operator has issued the signer, no bundle is claimed.
    unsigned = _installed(["DataImporter"], bundle=None)[("APIService", "v1beta1.upload.cdi.kubevirt.io")]
    assert "caBundle" not in unsigned["spec"]


def test_cdi_apiserver_may_review_access_and_touch_only_its_token_key(
    installed: dict[tuple[str, str], JSON],
) -> None:
    cluster = installed[("ClusterRole", "cdi-apiserver")]["rules"]
    assert _rule(["authorization.k8s.io"], ["subjectaccessreviews"], ["create"]) in cluster
    assert _rule([""], ["configmaps"], READ) in cluster  # kube-system's extension-apiserver-authentication
    assert not [rule for rule in cluster if "secrets" in rule["resources"]]
    assert installed[("Role", "cdi-apiserver")]["rules"] == [
        _rule([""], ["secrets"], READ, ["cdi-api-signing-key"]),
        _rule([""], ["secrets"], ["create"]),
    ]
    binding = installed[("RoleBinding", "cdi-apiserver")]
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "Role",
        "name": "cdi-apiserver",
    }
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "cdi-apiserver", "namespace": "cdi"}]
    cluster_binding = installed[("ClusterRoleBinding", "cdi-apiserver")]
    assert cluster_binding["subjects"] == binding["subjects"]


def test_cdi_uploadproxy_reads_claims_the_config_and_the_upload_servers_bundle(
    installed: dict[tuple[str, str], JSON],
) -> None:
    assert installed[("ClusterRole", "cdi-uploadproxy")]["rules"] == [
        _rule([""], ["persistentvolumeclaims"], ["get"]),
        _rule(["cdi.kubevirt.io"], ["cdiconfigs"], READ),
    ]
    assert installed[("Role", "cdi-uploadproxy")]["rules"] == [
        _rule([""], ["configmaps"], READ, ["cdi-uploadserver-signer-bundle"])
    ]


def test_cdi_deployment_gets_the_upload_server_image_and_the_signers(
    installed: dict[tuple[str, str], JSON],
) -> None:
    deployment = installed[("Deployment", "cdi-deployment")]
    container = _container(deployment)
    assert container["env"] == [
        {"name": "UPLOADSERVER_IMAGE", "value": "registry.test/kv/cdi-uploadserver:v9"},
        {"name": "CLONER_IMAGE", "value": "registry.test/kv/cdi-cloner:v9"},
        {"name": "UPLOADPROXY_SERVICE", "value": "cdi-uploadproxy"},
    ]
    # The importer image stays a flag, as before.
    assert container["args"][:2] == ["--importer-image", "registry.test/kv/cdi-importer:v9"]
    mounts = _mounts(deployment)
    assert _secret_of(mounts["/var/run/certs/cdi-uploadserver-signer/"][1]) == (
        "cdi-uploadserver-signer",
        ["tls.crt", "tls.key"],
    )
    assert _secret_of(mounts["/var/run/certs/cdi-uploadserver-client-signer/"][1]) == (
        "cdi-uploadserver-client-signer",
        ["tls.crt", "tls.key"],
    )
    for bundle in ("cdi-uploadserver-signer-bundle", "cdi-uploadserver-client-signer-bundle"):
        _, volume = mounts[f"/var/run/ca-bundle/{bundle}/"]
        assert volume["configMap"]["name"] == bundle
        assert [item["key"] for item in volume["configMap"]["items"]] == ["ca-bundle.crt"]
