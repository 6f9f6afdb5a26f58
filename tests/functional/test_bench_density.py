"""hack/bench-density in short, so that CI keeps it working: a few VMIs created 100 ms apart through a
KubeVirt installed by virt-operator (its own install: this module runs apart from tests/functional/installed),
measured to Running; then the fault run, which kills virt-controller, virt-handler, virt-api and one
virt-launcher on the way and must find nothing lost, doubled or orphaned."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from localcluster import install
from localcluster.density import run, workload
from localcluster.handle import Cluster

NETWORK = "masquerade"  # as KubeVirt's density test


@pytest.fixture(scope="module")
def kubevirt(cluster: Cluster) -> Iterator[float]:
    with install.installed(cluster) as deployed:
        yield deployed


def _round(cluster: Cluster, count: int, *, with_faults: bool) -> dict[str, Any]:
    options = run.Options(
        count, "vmi", workload.Shape(network=NETWORK), timeout=300.0, faults=with_faults, steady=2.0
    )
    result = run.Round(cluster, options, print).run()
    print(json.dumps({k: v for k, v in result.items() if k != "objects"}, indent=1))
    return result


def test_density_measures_every_vmi_to_running(cluster: Cluster, kubevirt: float) -> None:
    result = _round(cluster, 2, with_faults=False)
    assert result["running"] == 2
    latency = result["create_to_running_seconds"]
    assert 0 < latency["p50"] <= latency["p95"] <= latency["max"] < 300
    phases = result["median_phases_seconds"]
    # Every step of the median VMI was seen, from admission to the status write, and they add up (the
    # containers' start times come to the second: a step next to one may look up to a second short).
    assert all(seconds is not None and seconds > -1.0 for seconds in phases.values()), phases
    median = result["objects"][result["median_object"]]
    assert sum(phases.values()) == pytest.approx(median["running"] - median["create_sent"], abs=0.01)
    requests = result["api_requests_per_object"]
    assert requests.get("POST pods", 0) >= 1  # the launcher pod, by virt-controller
    assert "POST virtualmachineinstances" not in requests  # the benchmark's own creates are left out
    assert result["control_plane"]["virt-handler"]["cpu_seconds_to_running"] > 0
    assert result["launcher_pod_average"]["qemu"]["peak_rss_mib"] > 50
    # Who wrote each VMI: virt-controller (Scheduling, Scheduled) and virt-handler (Running, with the
    # Ready condition virt-controller would copy from the pod), three UPDATEs and no PATCH; none of
    # them was refused as stale or mis-guarded.
    writers = result["writes_by_manager_per_object"]
    assert writers.get("vmi virt-controller Update") == 2, writers
    assert writers.get("vmi virt-handler Update") == 1, writers
    assert requests.get("PUT virtualmachineinstances") == 3, requests
    assert "PATCH virtualmachineinstances" not in requests, requests
    refused = [key for key in result["failed_requests"] if "virtualmachineinstances" in key]
    assert refused == [], result["failed_requests"]
    assert result["left_after_delete"] == []


def test_fault_run_loses_doubles_and_orphans_nothing(cluster: Cluster, kubevirt: float) -> None:
    result = _round(cluster, 3, with_faults=True)
    fault = result["faults"]
    assert [i["program"] for i in fault["injected"]] == [
        "virt-controller",
        "virt-handler",
        "virt-api",
        "virt-launcher",
    ]
    assert all(i["pids"] for i in fault["injected"]), fault["injected"]
    assert fault["problems"] == []
    assert fault["running"] == 2  # the VMI whose launcher was killed is Failed
    assert result["left_after_delete"] == []
