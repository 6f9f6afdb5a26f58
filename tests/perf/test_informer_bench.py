"""Benchmark: listing and holding many VMIs in an informer's cache, against a real kube-apiserver.

Creates N VMIs (default 10,000; a running VMI's status, managedFields as the API server writes them) in
an etcd + kube-apiserver started for the run, then reports for the same list response:

* the informer's decoding (pydantic validating the raw list JSON into VirtualMachineInstance models in
  one pass, managedFields dropped): objects per second and memory per cached VMI;
* plain ``json.loads`` dicts, and ``VirtualMachineInstance.from_dict`` per item after ``json.loads``
  (both with managedFields, as a naive cache would hold them);
* the ``kubernetes`` package: its CustomObjectsApi list (the only way it reads custom resources: dicts),
  and its typed model decoding (``ApiClient.deserialize`` into V1PodList) on a list of as many pods;
* the informer end to end (list request, decode, index, handlers) until synced.

Run ``hack/bench-informer [N]``; under pytest it runs with 300 VMIs to keep the suite quick.
"""

from __future__ import annotations

import copy
import gc
import json
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import kubernetes

from kubevirt.client import NODES, PODS, VIRTUAL_MACHINE_INSTANCES, KubeClient
from kubevirt.client.resources import NAMESPACES
from kubevirt.controller import SharedInformerFactory
from kubevirt.controller.decode import decoder_for
from kubevirt_api.core.v1 import VirtualMachineInstance

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "hack" / "cluster"))

from localcluster.apiserver import running_apiserver  # noqa: E402

TEMPLATE = (
    REPO / "tests" / "testdata" / "conformance" / "vmi" / "valid" / "001-minimal-containerdisk.defaults.json"
)
NAMESPACE = "bench"
RUNNING_STATUS = {
    "phase": "Running",
    "nodeName": "node01",
    "qosClass": "Burstable",
    "launcherContainerImageVersion": "localhost/kubevirt/virt-launcher:devel",
    "migrationMethod": "BlockMigration",
    "migrationTransport": "Unix",
    "guestOSInfo": {},
    "runtimeUser": 107,
    "activePods": {"6f0c2a43-6d8e-4b1c-9a56-3f7d2c1b0e99": "node01"},
    "conditions": [
        {
            "type": "Ready",
            "status": "True",
            "lastProbeTime": None,
            "lastTransitionTime": "2026-12-01T10:00:05Z",
        },
        {
            "type": "LiveMigratable",
            "status": "False",
            "reason": "DisksNotLiveMigratable",
            "message": "cannot migrate VMI which does not use masquerade",
            "lastProbeTime": None,
            "lastTransitionTime": None,
        },
    ],
    "interfaces": [
        {
            "name": "default",
            "ipAddress": "10.244.0.17",
            "ipAddresses": ["10.244.0.17"],
            "mac": "52:54:00:6b:3c:58",
            "interfaceName": "eth0",
            "infoSource": "domain, guest-agent",
            "queueCount": 1,
            "podInterfaceName": "eth0",
        }
    ],
    "phaseTransitionTimestamps": [
        {"phase": phase, "phaseTransitionTimestamp": f"2026-12-01T10:00:0{index}Z"}
        for index, phase in enumerate(("Pending", "Scheduling", "Scheduled", "Running"))
    ],
    "currentCPUTopology": {"cores": 1, "sockets": 1, "threads": 1},
    "memory": {"guestAtBoot": "128Mi", "guestCurrent": "128Mi", "guestRequested": "128Mi"},
    "volumeStatus": [{"name": "rootdisk", "target": "sda"}],
    "selinuxContext": "none",
    "machine": {"type": "pc-q35-7.2"},
}


def vmi_body(index: int) -> dict[str, Any]:
    body = json.loads(TEMPLATE.read_text()) if index < 0 else copy.deepcopy(_TEMPLATE)
    meta = body["metadata"]
    for field in ("uid", "creationTimestamp", "namespace"):
        meta.pop(field, None)
    meta["name"] = f"vmi-{index:05d}"
    meta["labels"] = {"kubevirt.io/nodeName": "node01", "app": f"app-{index % 50}"}
    body.pop("status", None)
    return body


_TEMPLATE = vmi_body(-1)


def pod_like(index: int) -> dict[str, Any]:
    """A virt-launcher-sized pod for the typed-decoding comparison (no API server needed)."""
    return {
        "metadata": {
            "name": f"virt-launcher-vmi-{index:05d}-abcde",
            "namespace": NAMESPACE,
            "uid": f"00000000-0000-4000-8000-{index:012d}",
            "resourceVersion": str(1000 + index),
            "creationTimestamp": "2026-12-01T10:00:00Z",
            "labels": {
                "kubevirt.io": "virt-launcher",
                "kubevirt.io/created-by": "uid",
                "vm.kubevirt.io/name": "x",
            },
            "annotations": {
                "kubevirt.io/domain": f"vmi-{index:05d}",
                "post.hook.backup.velero.io/command": "[]",
            },
            "ownerReferences": [
                {
                    "apiVersion": "kubevirt.io/v1",
                    "kind": "VirtualMachineInstance",
                    "name": f"vmi-{index:05d}",
                    "uid": "u",
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {
            "nodeName": "node01",
            "containers": [
                {
                    "name": "compute",
                    "image": "localhost/kubevirt/virt-launcher:devel",
                    "command": ["/usr/bin/virt-launcher-monitor", "--qemu-timeout", "345s"],
                    "resources": {
                        "requests": {"cpu": "100m", "memory": "300Mi"},
                        "limits": {"devices.kubevirt.io/kvm": "1"},
                    },
                    "volumeMounts": [
                        {"name": "private", "mountPath": "/var/run/kubevirt-private"},
                        {"name": "sockets", "mountPath": "/var/run/kubevirt/sockets"},
                    ],
                }
            ],
            "volumes": [{"name": "private", "emptyDir": {}}, {"name": "sockets", "emptyDir": {}}],
            "tolerations": [
                {
                    "key": "node.kubernetes.io/not-ready",
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": 300,
                }
            ],
            "nodeSelector": {"kubevirt.io/schedulable": "true"},
        },
        "status": {
            "phase": "Running",
            "podIP": "10.244.0.17",
            "hostIP": "10.244.0.1",
            "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2026-12-01T10:00:05Z"}],
            "startTime": "2026-12-01T10:00:00Z",
        },
    }


def populate(kube: KubeClient, count: int) -> float:
    kube.create(NAMESPACES, None, {"metadata": {"name": NAMESPACE}})

    def one(index: int) -> None:
        # VMIs have no status subresource: the status is stored as created.
        kube.create(VIRTUAL_MACHINE_INSTANCES, NAMESPACE, {**vmi_body(index), "status": RUNNING_STATUS})

    started = time.perf_counter()
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(one, range(count)))
    return time.perf_counter() - started


def timed(function: Callable[[], Any], rounds: int = 3) -> tuple[float, Any]:
    best, result = float("inf"), None
    for _ in range(rounds):
        result = None
        gc.collect()
        started = time.perf_counter()
        result = function()
        best = min(best, time.perf_counter() - started)
    return best, result


def held_bytes(function: Callable[[], Any]) -> int:
    """Bytes still allocated while the function's result is held."""
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    result = function()
    gc.collect()
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    del result
    return after - before


def decoding_rows(raw: bytes, count: int) -> list[str]:
    decoder = decoder_for(VIRTUAL_MACHINE_INSTANCES, VirtualMachineInstance)

    def per_item() -> list[VirtualMachineInstance]:
        return [VirtualMachineInstance.from_dict(item) for item in json.loads(raw)["items"]]

    rows: list[tuple[str, Callable[[], Any]]] = [
        (
            "informer decoding (list JSON -> models in one pass, collector paused)",
            lambda: decoder.list(raw)[0],
        ),
        ("plain dicts (json.loads, collector on)", lambda: json.loads(raw)["items"]),
        ("json.loads + from_dict per VMI (collector on)", per_item),
    ]
    lines = []
    for label, function in rows:
        seconds, items = timed(function)
        assert len(items) == count
        per_object = held_bytes(function) / count
        lines.append(f"{label}: {count / seconds:,.0f} VMIs/s, {per_object / 1024:.1f} KiB per cached VMI")
    return lines


def kubernetes_package_rows(kubeconfig: Path, count: int) -> list[str]:
    api = kubernetes.config.new_client_from_config(str(kubeconfig))
    custom = kubernetes.client.CustomObjectsApi(api)
    seconds, listed = timed(
        lambda: custom.list_namespaced_custom_object(
            "kubevirt.io", "v1", NAMESPACE, "virtualmachineinstances"
        )
    )
    assert len(listed["items"]) == count
    lines = [f"kubernetes CustomObjectsApi list (HTTP + dicts): {count / seconds:,.0f} VMIs/s"]
    pods = json.dumps(
        {
            "kind": "PodList",
            "apiVersion": "v1",
            "metadata": {"resourceVersion": "1"},
            "items": [pod_like(i) for i in range(count)],
        }
    )
    lines.append(f"pod list for the typed comparison: {len(pods) / count:.0f} B/pod")
    rows: list[tuple[str, Callable[[], Any]]] = [
        (
            "kubernetes typed decoding (V1PodList)",
            lambda: api.deserialize(pods, "V1PodList", "application/json").items,
        ),
        (
            "informer decoding of the same pods (dicts)",
            lambda: decoder_for(PODS, None).list(pods.encode())[0],
        ),
    ]
    for label, function in rows:
        seconds, items = timed(function, rounds=1)
        assert len(items) == count
        per_object = held_bytes(function) / count
        lines.append(f"{label}: {count / seconds:,.0f} pods/s, {per_object / 1024:.1f} KiB per pod")
    return lines


def informer_sync_row(kube: KubeClient, count: int) -> str:
    factory = SharedInformerFactory(kube, resync_seconds=0)
    informer = factory.informer(VIRTUAL_MACHINE_INSTANCES, VirtualMachineInstance)
    factory.informer(NODES)  # a second informer sharing the client
    started = time.perf_counter()
    factory.start()
    assert factory.wait_for_cache_sync(300)
    synced = time.perf_counter() - started
    factory.stop()
    assert len(informer.store) == count
    return (
        f"informer start -> synced, {count} VMIs cached and indexed (list request included): {synced:.2f} s"
    )


def measure(count: int) -> list[str]:
    with (
        tempfile.TemporaryDirectory(prefix="bench-informer-") as directory,
        running_apiserver(Path(directory)) as server,
    ):
        kube = KubeClient.from_kubeconfig(str(server.kubeconfig))
        seconds = populate(kube, count)
        lines = [f"created {count} VMIs in the API server in {seconds:.1f} s"]
        fetch, raw = timed(lambda: kube.list_raw(VIRTUAL_MACHINE_INSTANCES, NAMESPACE))
        size = f"{len(raw) / 1e6:.1f} MB, {len(raw) / count:.0f} B/VMI"
        lines.append(f"list response: {size}, fetched in {fetch:.2f} s")
        lines += decoding_rows(raw, count)
        lines += kubernetes_package_rows(server.kubeconfig, count)
        lines.append(informer_sync_row(kube, count))
    return lines


def test_informer_numbers_are_reported() -> None:
    for line in measure(300):
        print(line)


if __name__ == "__main__":
    for line in measure(int(sys.argv[1]) if len(sys.argv) > 1 else 10_000):
        print(line, flush=True)
