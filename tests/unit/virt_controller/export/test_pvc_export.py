"""Exporting a claim, pass by pass, against an in-memory API: the service, token and exporter pod made,
the status and links reported, a claim in use or missing, the pod's end, the TTL and certificate
renewals, with KubeVirt's names, reasons and events."""

from __future__ import annotations

import base64
from datetime import timedelta
from typing import Any

import pytest

from kubevirt.client import PERSISTENT_VOLUME_CLAIMS, PODS
from kubevirt.client.resources import (
    DATA_VOLUMES,
    INGRESSES,
    KUBEVIRTS,
    SECRETS,
    SERVICES,
    VIRTUAL_MACHINE_EXPORTS,
)
from kubevirt.virt_controller.watch.common import format_time, parse_time
from kubevirt.virt_controller.watch.export.certs import ExportCertificateError
from kubevirt_testing.certificates import self_signed

from .world import (
    CA_BUNDLE,
    CLAIM,
    EXPORT,
    KUBEVIRT_NS,
    NS,
    World,
    claim,
    export,
    pod_using,
)

BASE = f"https://virt-export-{EXPORT}.{NS}.svc"


def ready_export(world: World, **spec: Any) -> None:
    """An export of a populated, unused claim whose exporter pod runs and is ready."""
    world.add(PERSISTENT_VOLUME_CLAIMS, claim())
    world.add(VIRTUAL_MACHINE_EXPORTS, export(**spec))
    world.run()
    world.set_pod_phase("Running")
    world.run()


def test_a_claims_export_gets_its_service_token_and_pod() -> None:
    world = World()
    world.add(PERSISTENT_VOLUME_CLAIMS, claim())
    created = world.add(VIRTUAL_MACHINE_EXPORTS, export())
    world.run()

    service = world.get(SERVICES, f"virt-export-{EXPORT}")
    assert service["spec"]["ports"] == [{"protocol": "TCP", "port": 443, "targetPort": 8443}]
    assert service["spec"]["selector"] == {"kubevirt.io.virt-export-service": EXPORT}
    assert service["metadata"]["labels"] == {"kubevirt.io": "virt-exporter"}
    [owner] = service["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == (
        "VirtualMachineExport",
        EXPORT,
        created["metadata"]["uid"],
        True,
    )

    token = world.get(SECRETS, f"export-token-{EXPORT}")
    value = base64.b64decode(token["data"]["token"]).decode()
    assert len(value) == 20
    assert value.isalnum()
    assert token["type"] == "Opaque"
    assert token["metadata"]["ownerReferences"][0]["uid"] == created["metadata"]["uid"]

    pod = world.pod()
    assert pod is not None
    assert pod["metadata"]["labels"] == {"kubevirt.io.virt-export-service": EXPORT}
    assert {v["name"]: v for v in pod["spec"]["volumes"]}["token"]["secret"] == {
        "secretName": f"export-token-{EXPORT}"
    }
    status = world.status()
    assert status["tokenSecretRef"] == f"export-token-{EXPORT}"
    assert status["serviceName"] == f"virt-export-{EXPORT}"
    assert world.events.reasons() == [
        "ServiceCreated",
        "SecretCreated",
        "ExporterPodCreated",
        "SecretCreated",
    ]


def test_the_first_status_is_pending_with_the_ttl_from_the_creation() -> None:
    world = World()
    world.add(PERSISTENT_VOLUME_CLAIMS, claim())
    created = world.add(VIRTUAL_MACHINE_EXPORTS, export(ttlDuration="1h"))
    world.run()
    world.set_pod_phase("Pending")
    world.run()
    status = world.status()
    assert status["phase"] == "Pending"
    assert parse_time(status["ttlExpirationTime"]) == parse_time(
        created["metadata"]["creationTimestamp"]
    ) + timedelta(hours=1)
    conditions = world.conditions()
    assert (conditions["Ready"]["status"], conditions["Ready"]["reason"]) == ("False", "PodPending")
    assert conditions["Ready"]["lastProbeTime"] is None
    assert (conditions["PVCReady"]["status"], conditions["PVCReady"]["reason"]) == ("True", "PVCBound")


@pytest.mark.parametrize("ttl", ["30m", "+30m", "1800000000us", "0.5h"])
def test_the_ttl_is_read_as_go_reads_it(ttl: str) -> None:
    # Whatever the admission webhook takes (Go's ParseDuration) is the TTL used, not the default.
    world = World()
    world.add(PERSISTENT_VOLUME_CLAIMS, claim())
    created = world.add(VIRTUAL_MACHINE_EXPORTS, export(ttlDuration=ttl))
    world.run()
    assert parse_time(world.status()["ttlExpirationTime"]) == parse_time(
        created["metadata"]["creationTimestamp"]
    ) + timedelta(minutes=30)


def test_without_a_ttl_the_export_lives_two_hours() -> None:
    world = World()
    created = world.add(VIRTUAL_MACHINE_EXPORTS, export())
    world.run()
    expires = parse_time(world.status()["ttlExpirationTime"])
    assert expires - parse_time(created["metadata"]["creationTimestamp"]) == timedelta(hours=2)


def test_a_ready_pod_makes_the_export_ready_with_internal_links() -> None:
    world = World()
    ready_export(world)
    status = world.status()
    assert status["phase"] == "Ready"
    ready = world.conditions()["Ready"]
    assert (ready["status"], ready["reason"]) == ("True", "PodReady")
    internal = status["links"]["internal"]
    assert internal["cert"] == CA_BUNDLE  # the export CA bundle, trimmed
    assert internal["volumes"] == [
        {
            "name": CLAIM,
            "formats": [
                {"format": "raw", "url": f"{BASE}/volumes/{CLAIM}/disk.img"},
                {"format": "gzip", "url": f"{BASE}/volumes/{CLAIM}/disk.img.gz"},
            ],
        }
    ]
    assert internal["manifests"] == [
        {"type": "all", "url": f"{BASE}/internal/manifests/all"},
        {"type": "auth-header-secret", "url": f"{BASE}/internal/manifests/secret"},
    ]
    assert "external" not in status["links"]


def test_a_claim_of_files_is_linked_as_a_directory_and_an_archive() -> None:
    world = World()
    world.add(PERSISTENT_VOLUME_CLAIMS, claim(content_type="archive"))
    world.add(VIRTUAL_MACHINE_EXPORTS, export())
    world.run()
    world.set_pod_phase("Running")
    world.run()
    [volume] = world.status()["links"]["internal"]["volumes"]
    assert volume["formats"] == [
        {"format": "dir", "url": f"{BASE}/volumes/{CLAIM}/dir"},
        {"format": "tar.gz", "url": f"{BASE}/volumes/{CLAIM}/disk.tar.gz"},
    ]


def test_an_ingress_to_the_export_proxy_adds_external_links_with_its_certificate() -> None:
    world = World()
    host = "export.example.com"
    pair = self_signed(host, dns_names=(host,))
    world.add(
        SECRETS,
        {
            "metadata": {"name": "proxy-tls", "namespace": KUBEVIRT_NS},
            "data": {"tls.crt": base64.b64encode(pair.cert_pem).decode()},
        },
    )
    world.add(
        INGRESSES,
        {
            "metadata": {"name": "virt-exportproxy", "namespace": KUBEVIRT_NS},
            "spec": {
                "tls": [{"hosts": [host], "secretName": "proxy-tls"}],
                "rules": [
                    {
                        "host": host,
                        "http": {
                            "paths": [{"path": "/", "backend": {"service": {"name": "virt-exportproxy"}}}]
                        },
                    }
                ],
            },
        },
    )
    ready_export(world)
    external = world.status()["links"]["external"]
    base = f"https://{host}/api/export.kubevirt.io/v1beta1/namespaces/{NS}/virtualmachineexports/{EXPORT}"
    assert external["cert"] == pair.cert_pem.decode().strip()
    assert external["manifests"][0] == {"type": "all", "url": f"{base}/external/manifests/all"}
    assert external["volumes"][0]["formats"][0] == {
        "format": "raw",
        "url": f"{base}/volumes/{CLAIM}/disk.img",
    }


def test_an_ingress_to_another_service_gives_no_external_links() -> None:
    world = World()
    world.add(
        INGRESSES,
        {
            "metadata": {"name": "other", "namespace": KUBEVIRT_NS},
            "spec": {"defaultBackend": {"service": {"name": "other"}}, "rules": [{"host": "x.example.com"}]},
        },
    )
    ready_export(world)
    assert "external" not in world.status()["links"]


def test_a_claim_in_use_makes_the_export_wait_without_a_pod() -> None:
    world = World()
    world.add(PERSISTENT_VOLUME_CLAIMS, claim())
    world.add(PODS, pod_using(CLAIM))
    world.add(VIRTUAL_MACHINE_EXPORTS, export())
    assert world.run() == 3.0  # looked at again shortly
    assert world.pod() is None
    assert world.find(SECRETS, f"export-token-{EXPORT}") is None
    ready = world.conditions()["Ready"]
    assert (ready["status"], ready["reason"], ready["message"]) == (
        "False",
        "InUse",
        f"pvc {NS}/{CLAIM} is in use",
    )
    assert world.status()["phase"] == "Pending"
    assert world.status()["links"] == {}


def test_a_claim_taken_into_use_pauses_a_running_export() -> None:
    world = World()
    ready_export(world)
    world.add(PODS, pod_using(CLAIM))
    world.run()
    assert world.pod() is None
    assert world.events.events[-1][2:] == ("Warning", "ExportPaused", f"pvc {NS}/{CLAIM} is in use")
    assert world.conditions()["Ready"]["reason"] == "InUse"
    assert world.status()["phase"] == "Pending"


def test_a_missing_claim_is_reported_and_nothing_is_made_but_the_service() -> None:
    world = World()
    world.add(VIRTUAL_MACHINE_EXPORTS, export(source="nothing"))
    assert world.run() is None
    conditions = world.conditions()
    message = f"pvc {NS}/nothing not found"
    assert (conditions["PVCReady"]["reason"], conditions["PVCReady"]["message"]) == ("PVCNotFound", message)
    assert (conditions["Ready"]["reason"], conditions["Ready"]["message"]) == ("InUse", message)
    assert world.pod() is None
    assert world.objects(SECRETS) == []
    assert world.find(SERVICES, f"virt-export-{EXPORT}") is not None


def test_a_pending_claim_is_reported_pending() -> None:
    world = World()
    world.add(PERSISTENT_VOLUME_CLAIMS, claim(phase="Pending"))
    world.add(VIRTUAL_MACHINE_EXPORTS, export())
    world.run()
    pvc_ready = world.conditions()["PVCReady"]
    assert (pvc_ready["status"], pvc_ready["reason"]) == ("False", "PVCPending")


def test_a_claim_of_an_unfinished_data_volume_is_not_populated() -> None:
    world = World()
    owner = {
        "apiVersion": "cdi.kubevirt.io/v1beta1",
        "kind": "DataVolume",
        "name": CLAIM,
        "uid": "u",
        "controller": True,
    }
    world.add(
        DATA_VOLUMES, {"metadata": {"name": CLAIM}, "spec": {}, "status": {"phase": "ImportInProgress"}}
    )
    world.add(PERSISTENT_VOLUME_CLAIMS, claim(content_type=None, owner=owner))
    world.add(VIRTUAL_MACHINE_EXPORTS, export())
    assert world.run() == 3.0
    assert world.pod() is None
    assert world.conditions()["Ready"]["message"] == f"pvc {NS}/{CLAIM} is not populated"

    world.edit(DATA_VOLUMES, CLAIM, lambda dv: dv.update(status={"phase": "Succeeded"}))
    world.run()
    assert world.pod() is not None


def test_a_completed_exporter_pod_is_deleted_and_the_export_terminated() -> None:
    world = World()
    ready_export(world)
    world.set_pod_phase("Succeeded", ready=False)
    world.run()
    assert world.pod() is None
    pod_name = f"virt-export-{EXPORT}"
    assert world.events.events[-1][2:] == (
        "Warning",
        "ExporterPodFailedOrCompleted",
        f"Exporter pod {NS}/{pod_name} is in phase Succeeded",
    )
    assert world.status()["phase"] == "Terminated"
    assert world.conditions()["Ready"]["reason"] == "PodCompleted"
    world.run()
    assert world.pod() is not None  # served again


def test_an_export_past_its_ttl_is_deleted() -> None:
    world = World()
    ready_export(world, ttlDuration="30m")
    world.clock.advance(30 * 60)
    world.run()
    assert world.find(VIRTUAL_MACHINE_EXPORTS, EXPORT) is None


def test_a_served_export_is_looked_at_again_when_its_ttl_ends() -> None:
    world = World()
    world.add(PERSISTENT_VOLUME_CLAIMS, claim())
    world.add(VIRTUAL_MACHINE_EXPORTS, export(ttlDuration="10m"))
    assert world.run() == 600.0
    world.clock.advance(60)
    assert world.run() == 540.0


def test_the_server_stops_at_the_ttl_or_at_certificate_renewal_whichever_is_first() -> None:
    world = World()
    world.add(PERSISTENT_VOLUME_CLAIMS, claim())
    created = world.add(VIRTUAL_MACHINE_EXPORTS, export(ttlDuration="48h"))
    world.run()
    # A day's certificate renewed with a fifth of its life left, before the 48 h TTL.
    assert parse_time(world.env()["DEADLINE"]) == world.clock() + timedelta(hours=24 - 4.8)
    world.api.delete(PODS, NS, f"virt-export-{EXPORT}")
    world.api.delete(VIRTUAL_MACHINE_EXPORTS, NS, EXPORT)
    created = world.add(VIRTUAL_MACHINE_EXPORTS, export(ttlDuration="1h"))
    world.run()
    assert world.env()["DEADLINE"] == format_time(
        parse_time(created["metadata"]["creationTimestamp"]) + timedelta(hours=1)
    )


def test_new_certificate_parameters_recreate_the_exporter_pod() -> None:
    world = World()
    ready_export(world)
    strategy = {"selfSigned": {"server": {"duration": "48h", "renewBefore": "12h"}}}
    old = world.get(KUBEVIRTS, "kubevirt", KUBEVIRT_NS)
    new = world.edit(
        KUBEVIRTS,
        "kubevirt",
        lambda kv: kv["spec"].update(certificateRotateStrategy=strategy),
        namespace=KUBEVIRT_NS,
    )
    world.queued.clear()
    world.sync()
    world.controller.on_kubevirt_update(old, new)
    assert world.queued == [f"{NS}/{EXPORT}"]

    world.run()
    assert world.pod() is None
    assert world.events.events[-1][2:] == (
        "Warning",
        "CertificateParametersChanged",
        "Exporter TLS certificate parameters updated",
    )
    world.run()
    pod = world.pod()
    assert pod is not None
    nanoseconds = 1_000_000_000 * 3600
    assert pod["metadata"]["annotations"]["kubevirt.io/export.certParameters"] == (
        f'{{"Duration":{48 * nanoseconds},"RenewBefore":{12 * nanoseconds}}}'
    )


def test_a_given_token_secret_is_used_and_none_is_made() -> None:
    world = World()
    world.add(PERSISTENT_VOLUME_CLAIMS, claim())
    world.add(VIRTUAL_MACHINE_EXPORTS, export(tokenSecretRef="my-token"))
    world.run()
    assert world.status()["tokenSecretRef"] == "my-token"
    assert world.find(SECRETS, f"export-token-{EXPORT}") is None
    pod = world.pod()
    assert pod is not None
    assert {v["name"]: v for v in pod["spec"]["volumes"]}["token"] == {
        "name": "token",
        "secret": {"secretName": "my-token"},
    }


def test_without_a_kubevirt_cr_no_pod_is_made_and_the_pass_fails() -> None:
    world = World()
    world.api.delete(KUBEVIRTS, KUBEVIRT_NS, "kubevirt")
    world.add(PERSISTENT_VOLUME_CLAIMS, claim())
    world.add(VIRTUAL_MACHINE_EXPORTS, export())
    with pytest.raises(ExportCertificateError, match="no KubeVirt CR"):
        world.run()
    assert world.pod() is None


def test_a_deleting_export_is_left_alone() -> None:
    world = World()
    world.add(PERSISTENT_VOLUME_CLAIMS, claim())
    world.add(VIRTUAL_MACHINE_EXPORTS, export())
    world.edit(
        VIRTUAL_MACHINE_EXPORTS,
        EXPORT,
        lambda e: e["metadata"].update(deletionTimestamp="2026-01-01T00:00:00Z"),
    )
    world.run()
    assert world.api.writes == []


def test_an_unchanged_export_is_not_written_again() -> None:
    world = World()
    ready_export(world)
    before = [w for w in world.api.writes if w[1] == "virtualmachineexports"]
    world.run()
    assert [w for w in world.api.writes if w[1] == "virtualmachineexports"] == before
