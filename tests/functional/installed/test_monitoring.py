"""KubeVirt as a real Prometheus sees it (hack/monitoring's, built from Prometheus's Go module), set up the
way prometheus-operator would set it up from the ServiceMonitor and PrometheusRule virt-operator installs:

- every component's pods are healthy scrape targets through the kubevirt-prometheus-metrics Service;
- every alert and recording rule KubeVirt ships loads and evaluates, and the component counts the
  recording rules compute match the pods that run;
- a running VM's per-VMI series reach Prometheus from virt-handler, and ``hack/monitoring vm`` prints them;
- an alert fires: a VM that should live-migrate on eviction but cannot (a bridge on the pod network) raises
  ``VMCannotBeEvicted`` once its minute has passed.

One VM is booted for the module.
"""

from __future__ import annotations

import json
import subprocess
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from localcluster.handle import Cluster
from localcluster.layout import REPO
from localcluster.prometheus import Prometheus, monitoring
from localcluster.vmis import wait_vmi_phase

from kubevirt.virt_operator.resource.monitoring import alerts, recording_rules
from kubevirt_testing.waiting import first_result

NAMESPACE = "ft-monitoring"
NAME = "watched-guest"
COMPONENTS = ("virt-api", "virt-controller", "virt-handler", "virt-operator")
BOOT_TIMEOUT = 300.0
# Scrapes and rule evaluations run every 10 s here; a rate over 1 min needs two scrapes of a counter.
SERIES_TIMEOUT = 120.0
# VMCannotBeEvicted holds for 1 min before it fires.
ALERT_TIMEOUT = 240.0

pytestmark = [pytest.mark.usefixtures("kubevirt"), pytest.mark.timeout(900)]


@pytest.fixture(scope="module")
def prometheus(cluster: Cluster, kubevirt: float) -> Iterator[Prometheus]:
    with monitoring(cluster) as server:
        yield server


def _vm() -> dict[str, Any]:
    """The test guest with a bridge on the pod network (not live-migratable) and LiveMigrate on eviction."""
    return {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachine",
        "metadata": {"name": NAME},
        "spec": {
            "runStrategy": "Always",
            "template": {
                "spec": {
                    "evictionStrategy": "LiveMigrate",
                    "domain": {
                        "resources": {"requests": {"memory": "128Mi"}},
                        "devices": {
                            "interfaces": [{"name": "default", "bridge": {}}],
                            "disks": [{"name": "containerdisk", "disk": {"bus": "virtio"}}],
                        },
                    },
                    "networks": [{"name": "default", "pod": {}}],
                    "terminationGracePeriodSeconds": 0,
                    "volumes": [
                        {
                            "name": "containerdisk",
                            "containerDisk": {"image": "localhost/kubevirt/test-guest-container-disk:devel"},
                        }
                    ],
                }
            },
        },
    }


@pytest.fixture(scope="module")
def running_vm(cluster: Cluster, prometheus: Prometheus) -> Iterator[str]:
    cluster.fresh_namespace(NAMESPACE)
    try:
        cluster.kubectl("create", "-n", NAMESPACE, "-f", "-", stdin=json.dumps(_vm()))
        wait_vmi_phase(cluster, NAME, NAMESPACE, "Running", timeout=BOOT_TIMEOUT)
        yield NAME
    finally:
        cluster.kubectl("delete", "namespace", NAMESPACE, "--ignore-not-found", "--wait=true", check=False)


def _component_pods(cluster: Cluster) -> Counter[str]:
    pods = cluster.kubectl_json("get", "pods", "-n", "kubevirt", "--field-selector=status.phase=Running")
    items = pods.get("items") or []
    assert isinstance(items, list)
    return Counter(pod["metadata"]["labels"].get("kubevirt.io", "") for pod in items)


def _healthy_targets(prometheus: Prometheus) -> Counter[str]:
    return Counter(
        component
        for target in prometheus.active_targets()
        for component in COMPONENTS
        if target["labels"].get("pod", "").startswith(f"{component}-") and target["health"] == "up"
    )


def test_every_component_pod_is_a_healthy_target(cluster: Cluster, prometheus: Prometheus) -> None:
    running = _component_pods(cluster)
    expected = Counter({component: running[component] for component in COMPONENTS})
    assert all(expected.values()), running
    first_result(
        f"every component pod scraped ({dict(expected)})",
        lambda: _healthy_targets(prometheus) == expected,
        SERIES_TIMEOUT,
    )
    # The target labels prometheus-operator gives a ServiceMonitor's targets, which KubeVirt's rules use.
    target = next(t for t in prometheus.active_targets() if t["labels"]["pod"].startswith("virt-handler-"))
    assert target["labels"]["namespace"] == "kubevirt"
    assert target["labels"]["job"] == target["labels"]["service"] == "kubevirt-prometheus-metrics"
    assert target["scrapeUrl"].startswith("https://")


def test_every_rule_kubevirt_ships_loads_and_evaluates(cluster: Cluster, prometheus: Prometheus) -> None:
    def evaluated() -> list[dict[str, Any]] | None:
        rules = [rule for group in prometheus.rule_groups() for rule in group["rules"]]
        return (
            rules
            if rules and all(r.get("evaluationTime") is not None and r["health"] != "unknown" for r in rules)
            else None
        )

    loaded = first_result("every rule evaluated", evaluated, SERIES_TIMEOUT)
    assert {r["name"] for r in loaded if r["type"] == "alerting"} == {a.name for a in alerts("kubevirt")}
    assert {r["name"] for r in loaded if r["type"] == "recording"} == {
        r.name for r in recording_rules("kubevirt")
    }
    assert [(r["name"], r.get("lastError")) for r in loaded if r["health"] != "ok"] == []

    running = _component_pods(cluster)

    expected = {component: float(running[component]) for component in COMPONENTS}

    def counted() -> dict[str, float]:
        return {
            component: sum(
                s.points[-1][1] for s in prometheus.query(f"kubevirt_{component.replace('-', '_')}_up")
            )
            for component in COMPONENTS
        }

    # Each component's pod count, from `up` through KubeVirt's recording rules.
    first_result(f"the recording rules counting {expected}", lambda: counted() == expected, SERIES_TIMEOUT)
    leading = prometheus.query("kubevirt_virt_operator_leading")
    assert sum(s.points[-1][1] for s in leading) == 1.0


def test_a_running_vms_series_reach_prometheus(prometheus: Prometheus, running_vm: str) -> None:
    selector = f'namespace="{NAMESPACE}",name="{running_vm}"'

    def rate_of_cpu() -> float | None:
        found = prometheus.query(f"sum(rate(kubevirt_vmi_vcpu_seconds_total{{{selector}}}[1m]))")
        return found[0].points[-1][1] if found and found[0].points[-1][1] > 0 else None

    assert first_result("the guest's vCPU time rising", rate_of_cpu, SERIES_TIMEOUT) > 0
    info = prometheus.query(f'kubevirt_vmi_info{{{selector},phase="running"}}')
    assert len(info) == 1, info
    resident = prometheus.query(f"kubevirt_vmi_memory_resident_bytes{{{selector}}}")
    assert len(resident) == 1
    assert resident[0].points[-1][1] > 16 * 2**20

    printed = subprocess.run(
        [str(REPO / "hack" / "monitoring"), "vm", running_vm, "-n", NAMESPACE, "--minutes", "3"],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert printed.returncode == 0, printed.stderr
    rows = {line.split("  ")[0].strip() for line in printed.stdout.splitlines()[2:]}
    assert {"CPU (cores)", "memory: resident (QEMU)", "network: received [interface default]"} <= rows, (
        printed.stdout
    )


def test_a_vm_that_cannot_be_evicted_fires_vm_cannot_be_evicted(
    prometheus: Prometheus, running_vm: str
) -> None:
    def firing() -> dict[str, Any] | None:
        return next(
            (
                alert
                for alert in prometheus.alerts()
                if alert["labels"].get("alertname") == "VMCannotBeEvicted"
                and alert["labels"].get("name") == running_vm
                and alert["state"] == "firing"
            ),
            None,
        )

    alert = first_result("VMCannotBeEvicted firing", firing, ALERT_TIMEOUT)
    assert alert["labels"]["namespace"] == NAMESPACE
    assert alert["labels"]["severity"] == "warning"
    assert alert["annotations"]["runbook_url"].endswith("/VMCannotBeEvicted")
