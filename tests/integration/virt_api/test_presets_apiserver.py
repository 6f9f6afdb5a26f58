"""virt-api run in-process against a real kube-apiserver applies the VMI presets stored there.

The API server calls virt-api's VMI mutating webhook for the test's namespace, as a cluster's would.
Presets come from virt-api's informer: a preset created after virt-api started is applied, and creating
VMIs costs the API server no LIST of presets (read from its own ``apiserver_request_total``).
"""

from __future__ import annotations

import base64
import contextlib
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from localcluster.density.apimetrics import parse

from kubevirt.client import KubeClient
from kubevirt.client.errors import NotFoundError
from kubevirt.client.resources import (
    MUTATING_WEBHOOKS,
    VIRTUAL_MACHINE_INSTANCE_PRESETS,
    VIRTUAL_MACHINE_INSTANCES,
)
from kubevirt.virt_api import app as virt_api
from kubevirt.virt_api.webhooks.routes import VMI_MUTATE
from kubevirt.virt_api.webhooks.server import ServerLimits
from kubevirt.virt_config import ClusterConfig
from kubevirt.virt_operator.resource.webhooks import mutating_webhook_configuration
from kubevirt_testing.inprocess import https_json, virt_api_running, write_certificate
from kubevirt_testing.process import free_port
from kubevirt_testing.waiting import eventually

JSON = dict[str, Any]
APPLIED = "virtualmachinepreset.kubevirt.io/small"
VMI_CREATES = 10


@dataclass(frozen=True)
class VirtApi:
    port: int
    namespace: str


def preset_lists(kube: KubeClient) -> int:
    """How many LISTs of presets the API server has answered so far (anyone's, any scope)."""
    counts = parse(kube.request("GET", "/metrics").decode())
    return counts[("LIST", "virtualmachineinstancepresets")]


PRESET_WATCHES = re.compile(
    r'^apiserver_longrunning_requests\{[^}]*resource="virtualmachineinstancepresets"[^}]*verb="WATCH"[^}]*\}'
    r" (?P<value>\S+)$",
    re.MULTILINE,
)


def preset_watches(kube: KubeClient) -> int:
    """How many watches of presets the API server is serving now."""
    text = kube.request("GET", "/metrics").decode()
    return sum(int(float(match["value"])) for match in PRESET_WATCHES.finditer(text))


def mutating_hook(namespace: str, port: int, ca_pem: bytes) -> JSON:
    """virt-api's VMI mutating webhook, reached at ``127.0.0.1:port`` and only for ``namespace``."""
    configuration = mutating_webhook_configuration(namespace, ca_pem)
    hook = next(h for h in configuration["webhooks"] if h["clientConfig"]["service"]["path"] == VMI_MUTATE)
    hook["clientConfig"] = {
        "url": f"https://127.0.0.1:{port}{VMI_MUTATE}",
        "caBundle": hook["clientConfig"]["caBundle"],
    }
    hook["namespaceSelector"] = {"matchLabels": {"kubernetes.io/metadata.name": namespace}}
    configuration["metadata"]["name"] = f"virt-api-mutator-{namespace}"
    configuration["webhooks"] = [hook]
    return configuration


def serving(port: int) -> bool:
    try:
        return https_json(port, "GET", "/healthz")[0] == 200
    except OSError:
        return False


@pytest.fixture
def served(apiserver: Any, kube: KubeClient, namespace: str, tmp_path: Path) -> Iterator[VirtApi]:
    """virt-api with its informer synced, hooked into the API server for ``namespace``."""
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
    watches_before = preset_watches(kube)
    with virt_api_running(options):
        eventually(lambda: serving(port), timeout=20, interval=0.1)
        # Once the informer watches, its list has landed. A LIST alone is not enough: the API server may
        # refuse the first (429) while it readies the presets' storage, and the informer lists again after
        # a backoff, in the middle of the reviews counted below.
        eventually(lambda: preset_watches(kube) > watches_before, timeout=20, interval=0.1)
        hook = kube.create(MUTATING_WEBHOOKS, None, mutating_hook(namespace, port, cert_file.read_bytes()))
        try:
            yield VirtApi(port, namespace)
        finally:
            with contextlib.suppress(NotFoundError):
                kube.delete(MUTATING_WEBHOOKS, None, hook["metadata"]["name"])


def vmi(name: str, namespace: str, flavor: str) -> JSON:
    return {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachineInstance",
        "metadata": {"name": name, "namespace": namespace, "labels": {"flavor": flavor}},
        "spec": {"domain": {"memory": {"guest": "128Mi"}, "devices": {}}},
    }


def reviewed_annotations(port: int, obj: JSON) -> JSON:
    """The annotations virt-api's mutating webhook gives ``obj`` on creation, asked directly (nothing
    is stored)."""
    namespace = obj["metadata"]["namespace"]
    request = {
        "uid": "u1",
        "kind": {"group": "kubevirt.io", "version": "v1", "kind": "VirtualMachineInstance"},
        "resource": {"group": "kubevirt.io", "version": "v1", "resource": "virtualmachineinstances"},
        "operation": "CREATE",
        "namespace": namespace,
        "name": obj["metadata"]["name"],
        "userInfo": {"username": "tester"},
        "object": obj,
    }
    document = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}
    status, body = https_json(port, "POST", VMI_MUTATE, document)
    assert status == 200, body
    answer: JSON = body["response"]
    assert answer["allowed"] is True, answer
    patch = {op["path"]: op["value"] for op in json.loads(base64.b64decode(answer["patch"]))}
    return annotations({"metadata": patch.get("/metadata") or {}})


def annotations(obj: JSON) -> JSON:
    return dict((obj.get("metadata") or {}).get("annotations") or {})


def test_a_preset_created_after_start_is_applied_and_vmi_creates_list_no_presets(
    kube: KubeClient, served: VirtApi
) -> None:
    namespace = served.namespace
    assert APPLIED not in annotations(
        kube.create(VIRTUAL_MACHINE_INSTANCES, namespace, vmi("before", namespace, "small"))
    )
    kube.create(
        VIRTUAL_MACHINE_INSTANCE_PRESETS,
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
    # The watch brings the preset to virt-api's cache a moment after the create returns.
    eventually(
        lambda: APPLIED in reviewed_annotations(served.port, vmi("probe", namespace, "small")),
        timeout=10,
        interval=0.05,
    )

    lists_before = preset_lists(kube)
    for index in range(VMI_CREATES):
        created = kube.create(VIRTUAL_MACHINE_INSTANCES, namespace, vmi(f"small-{index}", namespace, "small"))
        assert created["spec"]["domain"]["cpu"]["cores"] == 2
        assert annotations(created)[APPLIED] == "kubevirt.io/v1"
    large = kube.create(VIRTUAL_MACHINE_INSTANCES, namespace, vmi("large", namespace, "large"))
    assert APPLIED not in annotations(large)
    assert large["spec"]["domain"]["cpu"]["cores"] == 1  # virt-api's default, no preset
    assert preset_lists(kube) == lists_before  # VMI_CREATES + 1 reviews, no LIST of presets
