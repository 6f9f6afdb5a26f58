"""virt-api run in-process against a real kube-apiserver applies the VMI presets stored there."""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kubevirt.client import KubeClient, Resource
from kubevirt.virt_api import app as virt_api
from kubevirt.virt_api.webhooks.routes import VMI_MUTATE
from kubevirt.virt_api.webhooks.server import ServerLimits
from kubevirt.virt_config import ClusterConfig
from kubevirt_testing.inprocess import https_json, virt_api_running, write_certificate
from kubevirt_testing.process import free_port

JSON = dict[str, Any]
PRESETS = Resource("kubevirt.io", "v1", "virtualmachineinstancepresets", "VirtualMachineInstancePreset", True)


@pytest.fixture
def api_port(apiserver: Any, namespace: str, tmp_path: Path) -> Iterator[int]:
    cert_file, key_file = write_certificate(tmp_path)
    port = free_port()
    options = virt_api.Options(
        listen="127.0.0.1",
        port=port,
        tls_cert_file=cert_file,
        tls_key_file=key_file,
        config=ClusterConfig(),
        limits=ServerLimits(),
        kubeconfig=str(apiserver.kubeconfig),
        namespace=namespace,
        handler_namespace=namespace,
    )
    with virt_api_running(options):
        yield port


def _review(vmi: JSON, namespace: str) -> JSON:
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "u1",
            "kind": {"group": "kubevirt.io", "version": "v1", "kind": "VirtualMachineInstance"},
            "resource": {"group": "kubevirt.io", "version": "v1", "resource": "virtualmachineinstances"},
            "operation": "CREATE",
            "namespace": namespace,
            "name": "vmi",
            "userInfo": {"username": "tester"},
            "object": vmi,
        },
    }


def _mutate(port: int, vmi: JSON, namespace: str) -> JSON:
    for _ in range(100):  # virt-api may still be starting
        try:
            status, body = https_json(port, "POST", VMI_MUTATE, _review(vmi, namespace))
        except OSError:
            time.sleep(0.1)
            continue
        assert status == 200
        answer: JSON = body["response"]
        return answer
    raise AssertionError("virt-api did not answer")


def test_a_stored_preset_is_applied_by_the_mutating_webhook(
    kube: KubeClient, namespace: str, api_port: int
) -> None:
    kube.create(
        PRESETS,
        namespace,
        {
            "apiVersion": "kubevirt.io/v1",
            "kind": "VirtualMachineInstancePreset",
            "metadata": {"name": "small"},
            "spec": {
                "selector": {"matchLabels": {"flavor": "small"}},
                "domain": {"cpu": {"cores": 2}, "devices": {}},
            },
        },
    )
    vmi = {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachineInstance",
        "metadata": {"name": "vmi", "namespace": namespace, "labels": {"flavor": "small"}},
        "spec": {"domain": {"memory": {"guest": "128Mi"}, "devices": {}}},
    }
    answer = _mutate(api_port, vmi, namespace)
    assert answer["allowed"] is True
    patch = {op["path"]: op["value"] for op in json.loads(base64.b64decode(answer["patch"]))}
    assert patch["/spec"]["domain"]["cpu"]["cores"] == 2
    assert patch["/metadata"]["annotations"]["virtualmachinepreset.kubevirt.io/small"] == "kubevirt.io/v1"

    unmatched = {**vmi, "metadata": {**vmi["metadata"], "labels": {"flavor": "large"}}}
    answer = _mutate(api_port, unmatched, namespace)
    patch = {op["path"]: op["value"] for op in json.loads(base64.b64decode(answer["patch"]))}
    assert "virtualmachinepreset.kubevirt.io/small" not in (patch.get("/metadata") or {}).get(
        "annotations", {}
    )
