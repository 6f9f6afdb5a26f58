"""What an export creates, as KubeVirt lays it out: the exporter pod's volumes, environment, security
context and probe, its certificate Secret, and the names derived from long export names."""

from __future__ import annotations

import base64
from datetime import UTC, datetime, timedelta
from typing import Any

from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from kubevirt.client import PERSISTENT_VOLUME_CLAIMS
from kubevirt.client.resources import DATA_VOLUMES, SECRETS, VIRTUAL_MACHINE_EXPORTS
from kubevirt.virt_controller.services.exporter_pod import render_exporter_pod
from kubevirt.virt_controller.watch.export import manifests
from kubevirt.virt_controller.watch.export.certs import CertParams
from kubevirt.virt_controller.watch.export.names import (
    default_token_secret_name,
    export_label_value,
    export_service_name,
    pod_name,
)

from .world import CLAIM, EXPORT, IMAGE, NS, World, certificate_of, claim, export

DATA_VOLUME_OWNER = {
    "apiVersion": "cdi.kubevirt.io/v1beta1",
    "kind": "DataVolume",
    "name": CLAIM,
    "uid": "dv-uid",
    "controller": True,
}


def exporter_pod(world: World, *claims: dict[str, Any]) -> dict[str, Any]:
    for pvc in claims:
        world.add(PERSISTENT_VOLUME_CLAIMS, pvc)
    world.add(VIRTUAL_MACHINE_EXPORTS, export())
    world.run()
    pod = world.pod()
    assert pod is not None
    return pod


def test_the_pod_runs_the_exporter_image_unprivileged_with_a_readiness_probe() -> None:
    world = World()
    pod = exporter_pod(world, claim())
    assert pod["metadata"]["annotations"] == {
        "kubevirt.io/export.certParameters": '{"Duration":86400000000000,"RenewBefore":17280000000000}'
    }
    spec = pod["spec"]
    assert spec["restartPolicy"] == "Never"
    assert spec["securityContext"] == {
        "runAsNonRoot": True,
        "fsGroup": 107,
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    [container] = spec["containers"]
    assert (container["name"], container["image"], container["imagePullPolicy"]) == (
        "exporter",
        IMAGE,
        "IfNotPresent",
    )
    assert container["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
    }
    assert container["resources"] == {
        "limits": {"cpu": "1", "memory": "1024Mi"},
        "requests": {"cpu": "100m", "memory": "200Mi"},
    }
    assert container["readinessProbe"] == {
        "httpGet": {"scheme": "HTTPS", "path": "/exportready", "port": 8443},
        "initialDelaySeconds": 5,
        "periodSeconds": 5,
    }
    [owner] = pod["metadata"]["ownerReferences"]
    assert (owner["apiVersion"], owner["kind"], owner["name"]) == (
        "export.kubevirt.io/v1beta1",
        "VirtualMachineExport",
        EXPORT,
    )


def test_a_filesystem_claim_of_a_disk_image_is_mounted_read_only_and_served_raw() -> None:
    world = World()
    pod = exporter_pod(world, claim())
    [container] = pod["spec"]["containers"]
    assert container["volumeMounts"] == [
        {"name": CLAIM, "readOnly": True, "mountPath": f"/export-volumes/{CLAIM}"},
        {"name": "certificates", "mountPath": "/cert"},
        {"name": "token", "mountPath": "/token"},
    ]
    assert "volumeDevices" not in container
    env = [(e["name"], e.get("value")) for e in container["env"]]
    assert env[0] == ("POD_NAME", None)
    assert container["env"][0]["valueFrom"] == {"fieldRef": {"fieldPath": "metadata.name"}}
    assert env[1:4] == [
        ("VOLUME0_EXPORT_PATH", f"/export-volumes/{CLAIM}"),
        ("VOLUME0_EXPORT_RAW_URI", f"/volumes/{CLAIM}/disk.img"),
        ("VOLUME0_EXPORT_RAW_GZIP_URI", f"/volumes/{CLAIM}/disk.img.gz"),
    ]
    assert [name for name, _ in env[4:]] == [
        "CERT_FILE",
        "KEY_FILE",
        "TOKEN_FILE",
        "DEADLINE",
        "EXPORT_VM_DEF_URI",
        "EXPORT_SECRET_DEF_URI",
    ]
    values = dict(env)
    assert (values["CERT_FILE"], values["KEY_FILE"], values["TOKEN_FILE"]) == (
        "/cert/tls.crt",
        "/cert/tls.key",
        "/token/token",
    )
    assert (values["EXPORT_VM_DEF_URI"], values["EXPORT_SECRET_DEF_URI"]) == (
        "/manifests/all",
        "/manifests/secret",
    )
    volumes = {v["name"]: v for v in pod["spec"]["volumes"]}
    assert volumes[CLAIM] == {"name": CLAIM, "persistentVolumeClaim": {"claimName": CLAIM}}
    assert volumes["certificates"]["secret"]["secretName"].startswith("secret-")
    assert len(volumes["certificates"]["secret"]["secretName"]) == len("secret-") + 10


def test_a_block_claim_is_a_device_served_raw() -> None:
    world = World()
    pod = exporter_pod(world, claim(block=True, content_type=None))
    [container] = pod["spec"]["containers"]
    assert container["volumeDevices"] == [{"name": CLAIM, "devicePath": f"/dev/export-volumes/{CLAIM}"}]
    assert [m["name"] for m in container["volumeMounts"]] == ["certificates", "token"]
    assert world.env()["VOLUME0_EXPORT_RAW_URI"] == f"/volumes/{CLAIM}/disk.img"


def test_a_claim_of_files_is_served_as_a_directory_and_an_archive() -> None:
    world = World()
    exporter_pod(world, claim(content_type="archive"))
    env = world.env()
    assert env["VOLUME0_EXPORT_ARCHIVE_URI"] == f"/volumes/{CLAIM}/disk.tar.gz"
    assert env["VOLUME0_EXPORT_DIR_URI"] == f"/volumes/{CLAIM}/dir/"
    assert "VOLUME0_EXPORT_RAW_URI" not in env


def test_an_empty_content_type_is_kubevirts_default_a_disk_image() -> None:
    world = World()
    exporter_pod(world, claim(content_type=""))
    assert "VOLUME0_EXPORT_RAW_URI" in world.env()


def test_a_claim_without_content_type_holds_files() -> None:
    world = World()
    exporter_pod(world, claim(content_type=None))
    assert "VOLUME0_EXPORT_DIR_URI" in world.env()


def test_a_data_volumes_content_type_decides_for_its_claim() -> None:
    for content_type, served in (
        ("kubevirt", "VOLUME0_EXPORT_RAW_URI"),
        ("archive", "VOLUME0_EXPORT_DIR_URI"),
    ):
        world = World()
        world.add(
            DATA_VOLUMES,
            {
                "metadata": {"name": CLAIM},
                "spec": {"contentType": content_type},
                "status": {"phase": "Succeeded"},
            },
        )
        exporter_pod(world, claim(content_type=None, owner=DATA_VOLUME_OWNER))
        assert served in world.env(), content_type


def test_the_certificate_secret_belongs_to_the_pod_and_is_signed_by_the_export_ca() -> None:
    world = World()
    pod = exporter_pod(world, claim())
    name = {v["name"]: v for v in pod["spec"]["volumes"]}["certificates"]["secret"]["secretName"]
    secret = world.get(SECRETS, name)
    assert secret["type"] == "kubernetes.io/tls"
    [owner] = secret["metadata"]["ownerReferences"]
    assert (owner["apiVersion"], owner["kind"], owner["name"], owner["uid"]) == (
        "v1",
        "Pod",
        pod["metadata"]["name"],
        pod["metadata"]["uid"],
    )
    cert = certificate_of(secret)
    cert.verify_directly_issued_by(world.ca.pair.cert)
    service = f"virt-export-{EXPORT}"
    assert (
        cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value
        == f"{service}.{NS}.pod.cluster.local"
    )
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value.get_values_for_type(
        x509.DNSName
    )
    assert names == [service, f"{service}.{NS}", f"{service}.{NS}.svc", f"{service}.{NS}.svc.cluster.local"]
    usages = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(usages) == [ExtendedKeyUsageOID.SERVER_AUTH]
    assert cert.not_valid_after_utc - cert.not_valid_before_utc == timedelta(days=1)
    assert b"PRIVATE KEY" in base64.b64decode(secret["data"]["tls.key"])


def test_a_running_pods_certificate_secret_is_not_made_again() -> None:
    world = World()
    exporter_pod(world, claim())
    world.set_pod_phase("Running")
    world.run()
    assert [reason for reason in world.events.reasons() if reason == "SecretCreated"] == ["SecretCreated"] * 2


def test_several_claims_get_numbered_environments() -> None:
    obj = export()
    obj["metadata"]["uid"] = "uid"
    pod = manifests.exporter_pod(
        render_exporter_pod(obj, "virt-export", image="i", image_pull_policy="Always"),
        obj,
        [claim("a.b"), claim("c", block=True)],
        params=CertParams(timedelta(hours=1), timedelta(minutes=10)),
        raw=lambda pvc: pvc["metadata"]["name"] == "c",
        deadline=datetime(2030, 1, 1, tzinfo=UTC),
    )
    env = {e["name"]: e.get("value") for e in pod["spec"]["containers"][0]["env"]}
    assert env["VOLUME0_EXPORT_PATH"] == "/export-volumes/a-b"  # dots are not allowed in volume names
    assert env["VOLUME0_EXPORT_DIR_URI"] == "/volumes/a.b/dir/"
    assert env["VOLUME1_EXPORT_PATH"] == "/dev/export-volumes/c"
    assert env["VOLUME1_EXPORT_RAW_GZIP_URI"] == "/volumes/c/disk.img.gz"
    assert env["DEADLINE"] == "2030-01-01T00:00:00Z"
    assert pod["spec"]["volumes"][0] == {"name": "a-b", "persistentVolumeClaim": {"claimName": "a.b"}}


def test_long_export_names_are_hashed_into_dns_labels() -> None:
    long_name = "x" * 70
    for name in (export_service_name(long_name), pod_name(long_name), default_token_secret_name(long_name)):
        assert len(name) <= 63
    assert export_label_value(long_name) != long_name
    assert len(export_label_value(long_name)) <= 63
    assert export_service_name("a.b") == "virt-export-a-b"
    assert pod_name("a") == "virt-export-a"
    assert default_token_secret_name("a") == "export-token-a"
    # At 53 characters the hashed form would start with "-": the suffix is cut by one.
    assert not export_service_name("y" * 53).startswith("-")
    assert len(export_service_name("y" * 53)) <= 63
