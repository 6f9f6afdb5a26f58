"""The VM's manifests and the token Secret, as KubeVirt's export server writes them."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from kubevirt.export.paths import EXTERNAL_CA_KEY, EXTERNAL_HOST_KEY, VM_MANIFEST_KEY
from kubevirt_testing.export_server import CA_NAME, EXPORT, INTERNAL_HOST, TOKEN, Exporter

pytestmark = pytest.mark.timeout(60)

ALL = "/internal/manifests/all"
SECRET = "/internal/manifests/secret"
HTTP_SOURCE = {"certConfigMap": CA_NAME, "secretExtraHeaders": [f"header-secret-{EXPORT}"]}


def _items(exporter: Exporter, path: str = ALL) -> list[Any]:
    reply = exporter.request(path)
    assert reply.status == 200
    assert reply.headers["Content-Type"] == "text/plain; charset=utf-8"
    document = json.loads(reply.body)
    assert (document["kind"], document["apiVersion"], document["metadata"]) == ("List", "v1", {})
    return list(document["items"])


def test_the_vm_manifests_point_their_imports_at_this_export(exporter: Exporter) -> None:
    ca, vm, dv = _items(exporter)
    assert (ca["kind"], ca["apiVersion"], ca["metadata"]["name"]) == ("ConfigMap", "v1", CA_NAME)
    assert list(vm)[:2] == ["kind", "apiVersion"]
    assert (vm["kind"], vm["apiVersion"]) == ("VirtualMachine", "kubevirt.io/v1")
    assert vm["spec"]["dataVolumeTemplates"][0]["spec"]["source"]["http"] == {
        "url": f"https://{INTERNAL_HOST}/volumes/fs-disk/disk.img.gz",
        **HTTP_SOURCE,
    }
    assert (dv["kind"], dv["apiVersion"], dv["metadata"]["name"]) == (
        "DataVolume",
        "cdi.kubevirt.io/v1beta1",
        "block-disk",
    )
    assert dv["spec"]["source"]["http"] == {
        "url": f"https://{INTERNAL_HOST}/volumes/block-disk/disk.img.gz",
        **HTTP_SOURCE,
    }


def test_json_is_indented_as_go_s_marshal_indent(exporter: Exporter) -> None:
    body = exporter.request(ALL).body
    assert body.startswith(
        b'{\n    "kind": "List",\n    "apiVersion": "v1",\n    "metadata": {},\n    "items": ['
    )


def test_yaml_when_asked_for(exporter: Exporter) -> None:
    reply = exporter.request(ALL, headers={"Accept": "application/yaml"})
    assert reply.status == 200
    assert reply.body.endswith(b"---\n")
    documents = [doc for doc in yaml.safe_load_all(reply.body) if doc is not None]
    assert [doc["kind"] for doc in documents] == ["ConfigMap", "VirtualMachine", "DataVolume"]
    # go-yaml's styles: a multi-line string as a literal block, sorted keys.
    assert b"userData: |\n" in reply.body
    assert reply.body.index(b"apiVersion: v1") < reply.body.index(b"kind: ConfigMap")


def test_the_external_manifests_use_the_external_host(exporter: Exporter) -> None:
    assert exporter.request("/external/manifests/all").status == 404  # no external host yet
    data = exporter.root / "manifest_data"
    (data / EXTERNAL_HOST_KEY).write_text(
        "proxy.example.com/api/export.kubevirt.io/v1beta1/namespaces/ns/virtualmachineexports/my-export"
    )
    (data / EXTERNAL_CA_KEY).write_text(json.dumps({"metadata": {"name": "ext-ca"}, "data": {}}))
    _, vm, _ = _items(exporter, "/external/manifests/all")
    http = vm["spec"]["dataVolumeTemplates"][0]["spec"]["source"]["http"]
    assert http["url"] == (
        "https://proxy.example.com/api/export.kubevirt.io/v1beta1/namespaces/ns/virtualmachineexports/"
        "my-export/volumes/fs-disk/disk.img.gz"
    )
    assert http["certConfigMap"] == "ext-ca"


def test_the_secret_carries_the_token_header(exporter: Exporter) -> None:
    (secret,) = _items(exporter, SECRET)
    assert secret == {
        "kind": "Secret",
        "apiVersion": "v1",
        "metadata": {"name": f"header-secret-{EXPORT}", "creationTimestamp": None},
        "stringData": {"token": f"x-kubevirt-export-token:{TOKEN}"},
    }


@pytest.mark.parametrize("path", [ALL, SECRET])
@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "HEAD"])
def test_only_get_is_answered(exporter: Exporter, path: str, method: str) -> None:
    assert exporter.request(path, method=method).status == 400


@pytest.mark.parametrize("content", ["not json", "[1, 2]"])
def test_an_unreadable_vm_definition_answers_500(exporter: Exporter, content: str) -> None:
    target = exporter.root / "manifest_data" / VM_MANIFEST_KEY
    target.unlink()
    target.write_text(content)
    assert exporter.request(ALL).status == 500


def test_a_template_without_an_http_source_answers_500(exporter: Exporter) -> None:
    target = exporter.root / "manifest_data" / VM_MANIFEST_KEY
    vm = json.loads(target.read_text())
    vm["spec"]["dataVolumeTemplates"][0]["spec"]["source"] = {"blank": {}}
    target.unlink()
    target.write_text(json.dumps(vm))
    assert exporter.request(ALL).status == 500


def test_a_volume_name_cannot_lead_out_of_the_manifests(exporter: Exporter) -> None:
    target = exporter.root / "manifest_data" / VM_MANIFEST_KEY
    vm = json.loads(target.read_text())
    vm["spec"]["template"]["spec"]["volumes"].append({"name": "x", "dataVolume": {"name": "../../token"}})
    target.unlink()
    target.write_text(json.dumps(vm))
    assert [item["kind"] for item in _items(exporter)] == ["ConfigMap", "VirtualMachine", "DataVolume"]
