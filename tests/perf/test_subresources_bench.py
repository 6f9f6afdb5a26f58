"""Benchmark: the subresource API through a real kube-apiserver's aggregator.

Starts etcd + kube-apiserver and virt-api (with a stand-in virt-handler, ``kubevirt_testing.aggregated``),
then has N concurrent clients (default 8), each on its own VM and VMI, send ``start``/``stop`` (alternating),
``pause`` and ``migrate`` through the API server. Reports per operation the latency percentiles seen by the
clients and, from the API server's ``apiserver_request_total``, the writes each call caused (KubeVirt
makes exactly one: a VM patch, none for pause, a migration create), with the SubjectAccessReviews (not
persisted) counted apart.

Run ``hack/bench-subresources [CLIENTS] [CALLS_PER_CLIENT]``; under pytest it runs 2 clients x 3 calls.
"""

from __future__ import annotations

import re
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "hack" / "cluster"))
sys.path.insert(0, str(REPO / "tests" / "lib"))

from localcluster.apiserver import running_apiserver  # noqa: E402

from kubevirt.client import KubeClient  # noqa: E402
from kubevirt_testing.aggregated import (  # noqa: E402
    HANDLER_NODE,
    NAMESPACES,
    create_vm,
    create_vmi,
    running_aggregated_virt_api,
)

NAMESPACE = "bench"
BASE = f"/apis/subresources.kubevirt.io/v1/namespaces/{NAMESPACE}"
WRITE_VERBS = {"POST", "PUT", "PATCH", "DELETE", "APPLY"}
# The API server's own housekeeping (its lease and the kubernetes Service's endpoints), not ours.
HOUSEKEEPING = {"leases", "endpoints"}
METRIC = re.compile(r"^apiserver_request_total\{(?P<labels>[^}]*)\} (?P<value>\S+)$")


def _writes(kube: KubeClient) -> Counter[str]:
    """Write requests the API server has served, by ``resource[/subresource]`` (aggregated calls excluded)."""
    counts: Counter[str] = Counter()
    for line in kube.request("GET", "/metrics", timeout=60).decode().splitlines():
        found = METRIC.match(line)
        if not found:
            continue
        labels = dict(re.findall(r'(\w+)="([^"]*)"', found["labels"]))
        if labels.get("verb") not in WRITE_VERBS or labels.get("group") == "subresources.kubevirt.io":
            continue
        if labels.get("resource") in HOUSEKEEPING:
            continue
        name = labels.get("resource", "") + (f"/{labels['subresource']}" if labels.get("subresource") else "")
        counts[name] += int(float(found["value"]))
    return counts


def _prepare(kube: KubeClient, clients: int) -> None:
    kube.create(NAMESPACES, None, {"metadata": {"name": NAMESPACE}})
    for index in range(clients):
        # vmN is stopped (started and stopped in turn); runN runs (paused and migrated).
        create_vm(kube, NAMESPACE, f"vm{index}", "Halted")
        create_vm(kube, NAMESPACE, f"run{index}", "Always")
        create_vmi(kube, NAMESPACE, f"run{index}", {"phase": "Running", "nodeName": HANDLER_NODE})


def _run_clients(
    kubeconfig: Path, clients: int, calls: int, path_for: Callable[[int, int], str]
) -> tuple[list[float], float]:
    """Each client sends ``calls`` PUTs one after another; returns the latencies (s) and the wall time."""
    latencies: list[float] = []
    lock = threading.Lock()
    errors: list[BaseException] = []

    def client(index: int) -> None:
        kube = KubeClient.from_kubeconfig(str(kubeconfig))
        try:
            for call in range(calls):
                began = time.perf_counter()
                kube.request("PUT", path_for(index, call), body={})
                with lock:
                    latencies.append(time.perf_counter() - began)
        except BaseException as err:  # reported after the threads joined
            errors.append(err)

    threads = [threading.Thread(target=client, args=(index,)) for index in range(clients)]
    began = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    return latencies, time.perf_counter() - began


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def measure(clients: int = 8, calls: int = 50) -> list[str]:
    lines = [f"{clients} concurrent clients x {calls} calls each, through kube-apiserver's aggregator"]
    with tempfile.TemporaryDirectory() as scratch, running_apiserver(Path(scratch) / "apiserver") as server:
        workdir = Path(scratch) / "virt-api"
        workdir.mkdir()
        with running_aggregated_virt_api(server.kubeconfig, server.directory / "pki", workdir) as api:
            kube = KubeClient.from_kubeconfig(str(server.kubeconfig))
            _prepare(kube, clients)
            operations: dict[str, Callable[[int, int], str]] = {
                "start/stop": lambda i, n: (
                    f"{BASE}/virtualmachines/vm{i}/{'start' if n % 2 == 0 else 'stop'}"
                ),
                "pause": lambda i, n: f"{BASE}/virtualmachineinstances/run{i}/pause",
                "migrate": lambda i, n: f"{BASE}/virtualmachines/run{i}/migrate",
            }
            handler_calls = len(api.handler.calls)
            for name, path_for in operations.items():
                before = _writes(kube)
                latencies, wall = _run_clients(server.kubeconfig, clients, calls, path_for)
                caused = _writes(kube) - before
                reviews = caused.pop("subjectaccessreviews", 0)
                total = clients * calls
                per_call = ", ".join(
                    f"{resource} {count / total:g}" for resource, count in sorted(caused.items())
                )
                lines.append(
                    f"{name:10s} p50 {statistics.median(latencies) * 1000:6.1f} ms  "
                    f"p99 {_percentile(latencies, 0.99) * 1000:6.1f} ms  {total / wall:6.1f} calls/s  "
                    f"writes per call: {per_call or 'none'} (+{reviews / total:g} SubjectAccessReview)"
                )
            forwarded = len(api.handler.calls) - handler_calls
            lines.append(f"pause calls forwarded to virt-handler: {forwarded} of {clients * calls}")
    return lines


def test_subresource_numbers_are_reported() -> None:
    lines = measure(clients=2, calls=3)
    assert len(lines) == 5
    assert "writes per call: virtualmachines 1 " in lines[1]
    assert "writes per call: none " in lines[2]
    assert "writes per call: virtualmachineinstancemigrations 1 " in lines[3]
    assert lines[4].endswith("6 of 6")


def _main(argv: list[str]) -> None:
    clients = int(argv[1]) if len(argv) > 1 else 8
    calls = int(argv[2]) if len(argv) > 2 else 50
    for line in measure(clients, calls):
        print(line)


if __name__ == "__main__":
    _main(sys.argv)
