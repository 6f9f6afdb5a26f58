"""virt-api answering from cluster state: a fake Kubernetes API behind ``--kubeconfig``."""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest

VMI = {
    "apiVersion": "kubevirt.io/v1",
    "kind": "VirtualMachineInstance",
    "metadata": {"name": "vm1", "namespace": "ns"},
    "spec": {"evictionStrategy": "LiveMigrate", "domain": {"devices": {}}},
    "status": {
        "phase": "Running",
        "nodeName": "node-a",
        "conditions": [{"type": "LiveMigratable", "status": "True"}],
    },
}
POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {
        "name": "virt-launcher-vm1-abcde",
        "namespace": "ns",
        "labels": {"kubevirt.io": "virt-launcher"},
        "annotations": {"kubevirt.io/domain": "vm1"},
    },
    "spec": {"nodeName": "node-a", "containers": [{"name": "compute", "image": "virt-launcher"}]},
}


VERSION = {
    "major": "1",
    "minor": "32",
    "gitVersion": "v1.32.2",
    "gitCommit": "0000000000000000000000000000000000000000",
    "gitTreeState": "clean",
    "buildDate": "2026-01-01T00:00:00Z",
    "goVersion": "go1.23.6",
    "compiler": "gc",
    "platform": "linux/amd64",
}


class FakeApi:
    """Answers the few reads virt-api makes and records the patches it sends."""

    def __init__(self) -> None:
        self.migrations: list[dict[str, Any]] = []
        self.kubevirts: list[dict[str, Any]] = []
        self.patches: list[tuple[str, str, Any]] = []
        self.selectors: list[str] = []
        api = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *_: Any) -> None:
                pass

            def _send(self, code: int, body: Any) -> None:
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                url = urlparse(self.path)
                base = "/apis/kubevirt.io/v1/namespaces/ns/"
                if url.path == base + "virtualmachineinstances/vm1":
                    self._send(200, VMI)
                elif url.path == base + "virtualmachineinstancemigrations":
                    api.selectors.extend(parse_qs(url.query).get("labelSelector", []))
                    self._send(200, {"kind": "List", "items": api.migrations})
                elif url.path == "/api/v1/namespaces/ns/pods/virt-launcher-vm1-abcde":
                    self._send(200, POD)
                elif url.path == "/apis/kubevirt.io/v1/kubevirts":
                    self._send(200, {"kind": "KubeVirtList", "items": api.kubevirts})
                elif url.path in ("/version", "/version/"):
                    self._send(200, VERSION)
                else:
                    self._send(
                        404, {"kind": "Status", "code": 404, "reason": "NotFound", "message": "not found"}
                    )

            def do_PATCH(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length))
                api.patches.append((self.path, self.headers.get("Content-Type", ""), body))
                self._send(200, VMI)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory, launch_virt_api: Any) -> Iterator[tuple[FakeApi, Any]]:
    fake = FakeApi()
    workdir = tmp_path_factory.mktemp("virt-api-cluster")
    kubeconfig = workdir / "kubeconfig"
    kubeconfig.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "fake", "cluster": {"server": f"http://127.0.0.1:{fake.port}"}}],
                "users": [{"name": "nobody", "user": {}}],
                "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "nobody"}}],
                "current-context": "fake",
            }
        )
    )
    api = launch_virt_api(workdir, [f"--kubeconfig={kubeconfig}", "--config-refresh-interval=0.2"])
    yield fake, api
    api.stop()
    fake.server.shutdown()


VMIM = {"group": "kubevirt.io", "version": "v1", "resource": "virtualmachineinstancemigrations"}
PODS = {"group": "", "version": "v1", "resource": "pods"}


def _request(resource: dict[str, str], obj: dict[str, Any], **extra: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "uid": str(uuid.uuid4()),
        "operation": "CREATE",
        "resource": resource,
        "namespace": "ns",
        "userInfo": {"username": "alice"},
        "object": obj,
    }
    base.update(extra)
    return base


def test_healthz_reports_api_server_connectivity(cluster: tuple[FakeApi, Any]) -> None:
    _, api = cluster
    status, body = api.request("GET", "/healthz")
    assert status == 200
    assert json.loads(body)["apiserver"] == {"connectivity": "ok", "version": VERSION}


def test_migration_of_an_existing_vmi_is_allowed(cluster: tuple[FakeApi, Any]) -> None:
    fake, api = cluster
    fake.migrations = []
    migration = {"metadata": {"name": "m", "namespace": "ns"}, "spec": {"vmiName": "vm1"}}
    answer = api.review("/migration-validate-create", _request(VMIM, migration))
    assert answer["allowed"] is True
    assert "kubevirt.io/vmi-name in (vm1)" in fake.selectors


def test_migration_of_a_missing_vmi_or_during_another_is_refused(cluster: tuple[FakeApi, Any]) -> None:
    fake, api = cluster
    missing = {"metadata": {"name": "m", "namespace": "ns"}, "spec": {"vmiName": "ghost"}}
    answer = api.review("/migration-validate-create", _request(VMIM, missing))
    assert answer["status"]["message"] == 'the VMI "ns/ghost" does not exist'
    fake.migrations = [
        {"metadata": {"uid": "u-1"}, "spec": {"vmiName": "vm1"}, "status": {"phase": "Running"}}
    ]
    busy = {"metadata": {"name": "m2", "namespace": "ns"}, "spec": {"vmiName": "vm1"}}
    answer = api.review("/migration-validate-create", _request(VMIM, busy))
    assert answer["status"]["message"].startswith("in-flight migration detected. Active migration job (u-1)")
    fake.migrations = []


def test_evicting_a_launcher_pod_marks_the_vmi_and_answers_429(cluster: tuple[FakeApi, Any]) -> None:
    fake, api = cluster
    eviction = {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": "virt-launcher-vm1-abcde"},
    }
    before = len(fake.patches)
    dry = api.review(
        "/pod-eviction-validate",
        _request(PODS, eviction, name="virt-launcher-vm1-abcde", subResource="eviction", dryRun=True),
    )
    assert dry["status"]["code"] == 429
    assert len(fake.patches) == before  # a dry run marks nothing
    answer = api.review(
        "/pod-eviction-validate",
        _request(PODS, eviction, name="virt-launcher-vm1-abcde", subResource="eviction"),
    )
    assert answer["allowed"] is False
    assert answer["status"]["code"] == 429
    assert answer["status"]["message"] == 'Eviction triggered evacuation of VMI "ns/vm1"'
    path, content_type, body = fake.patches[-1]
    assert path == "/apis/kubevirt.io/v1/namespaces/ns/virtualmachineinstances/vm1"
    assert content_type == "application/json-patch+json"
    assert body == [{"op": "add", "path": "/status/evacuationNodeName", "value": "node-a"}]


def test_an_unreachable_api_is_a_stated_refusal(launch_virt_api: Any, tmp_path: Any) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "gone", "cluster": {"server": "http://127.0.0.1:9"}}],
                "users": [{"name": "u", "user": {}}],
                "contexts": [{"name": "gone", "context": {"cluster": "gone", "user": "u"}}],
                "current-context": "gone",
            }
        )
    )
    api = launch_virt_api(tmp_path, [f"--kubeconfig={kubeconfig}"], expect_healthy=False)
    try:
        status, body = api.request("GET", "/healthz")
        assert status == 500
        assert json.loads(body)["apiserver"]["connectivity"] == "failed"
        started = time.monotonic()
        migration = {"metadata": {"name": "m", "namespace": "ns"}, "spec": {"vmiName": "vm1"}}
        answer = api.review("/migration-validate-create", _request(VMIM, migration))
        assert answer["allowed"] is False
        assert answer["status"]["message"].startswith("cannot read VirtualMachineInstance ns/vm1")
        assert time.monotonic() - started < 9
    finally:
        api.stop()


def test_feature_gates_follow_the_kubevirt_cr(cluster: tuple[FakeApi, Any]) -> None:
    fake, api = cluster
    vmi = json.loads(
        (
            Path(__file__).parents[2]
            / "testdata"
            / "conformance"
            / "vmi"
            / "valid"
            / "001-minimal-containerdisk.defaults.json"
        ).read_text()
    )
    vmi["spec"]["volumes"].append({"name": "host", "hostDisk": {"path": "/data/disk.img", "type": "Disk"}})
    vmi["spec"]["domain"]["devices"]["disks"].append({"name": "host", "disk": {"bus": "virtio"}})
    vmis = {"group": "kubevirt.io", "version": "v1", "resource": "virtualmachineinstances"}

    def gate_refused() -> bool:
        answer = api.review("/virtualmachineinstances-validate-create", _request(vmis, vmi))
        messages = [c["message"] for c in answer.get("status", {}).get("details", {}).get("causes", [])]
        return "HostDisk feature gate is not enabled" in messages

    assert gate_refused()
    fake.kubevirts = [
        {
            "apiVersion": "kubevirt.io/v1",
            "kind": "KubeVirt",
            "metadata": {"name": "kubevirt", "namespace": "kubevirt"},
            "spec": {"configuration": {"developerConfiguration": {"featureGates": ["HostDisk"]}}},
        }
    ]
    deadline = time.monotonic() + 10
    while gate_refused():
        assert time.monotonic() < deadline, "the KubeVirt CR's feature gates were not picked up"
        time.sleep(0.2)
    fake.kubevirts = []
