"""KubeVirt as a real Prometheus sees it (hack/monitoring's Prometheus and kube-state-metrics, built from
their Go modules), set up the way prometheus-operator would set it up from the ServiceMonitor and
PrometheusRule virt-operator installs, on the two-node cluster:

- every component's pods are healthy scrape targets through the kubevirt-prometheus-metrics Service;
- every alert and recording rule KubeVirt ships loads and evaluates, and the component counts the
  recording rules compute match the pods that run;
- a guest that keeps a vCPU busy for 30 s and then pings its gateway shows both in its per-VMI series
  (CPU seconds, received bytes), with its resident memory and KubeVirt's phase counts, and
  ``hack/monitoring vm`` prints them;
- after a live migration the migration's series are there;
- a hung virt-handler (stopped with SIGSTOP) is seen by KubeVirt's rules: ``kubevirt_virt_handler_up``
  drops and ``VirtHandlerDaemonSetRolloutFailing`` and ``OrphanedVirtualMachineInstances`` go pending
  (they fire after 15 and 10 min);
- an alert fires: a VM that should live-migrate on eviction but cannot (a bridge on the pod network) raises
  ``VMCannotBeEvicted`` once its minute has passed.

Two VMs run for the module: the test guest under load (migratable) and a diskless VM that never boots an OS
(it only has to be Running and not migratable).
"""

from __future__ import annotations

import json
import re
import subprocess
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from localcluster import migration as mig
from localcluster.handle import Cluster
from localcluster.layout import REPO
from localcluster.metrics import component_pods
from localcluster.prometheus import Prometheus, monitoring
from localcluster.vmis import wait_vmi_phase

from kubevirt.virt_operator.resource.monitoring import alerts, recording_rules
from kubevirt_testing.waiting import first_result

NAMESPACE = "ft-monitoring"
LOADED = "loaded-guest"
UNEVICTABLE = "unevictable"
COMPONENTS = ("virt-api", "virt-controller", "virt-handler", "virt-operator")
BOOT_TIMEOUT = 300.0
# Scrapes and rule evaluations run every 10 s here; a rate over 1 min needs two scrapes of a counter.
SERIES_TIMEOUT = 120.0
# VMCannotBeEvicted holds for 1 min before it fires.
ALERT_TIMEOUT = 240.0
# virt-handler's readiness probe fails after 3 misses 20 s apart; its liveness probe restarts it after 3
# misses 45 s apart, so a hung one is seen not ready, then pending alerts, well before it is restarted.
HUNG_TIMEOUT = 150.0
BUSY_SECONDS = 30
PINGS, PING_BYTES = 200, 1400
LOAD_USER_DATA = f"""#!/bin/sh
(
  end=$(( $(date +%s) + {BUSY_SECONDS} ))
  while [ $(date +%s) -lt $end ]; do :; done
  echo "cpu load done"
  ping -q -c {PINGS} -i 0.05 -s {PING_BYTES} 10.0.2.1
  echo "network load done"
) > /dev/ttyS0 2>&1 &
"""

pytestmark = [pytest.mark.usefixtures("kubevirt"), pytest.mark.timeout(900)]


@pytest.fixture(scope="module")
def prometheus(cluster: Cluster, kubevirt: float) -> Iterator[Prometheus]:
    with monitoring(cluster) as server:
        yield server


def _loaded_vm() -> dict[str, Any]:
    """The test guest (masquerade, migratable) running LOAD_USER_DATA."""
    return {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachine",
        "metadata": {"name": LOADED},
        "spec": {"runStrategy": "Always", "template": {"spec": mig.guest_vmi_spec(LOAD_USER_DATA)}},
    }


def _unevictable_vm() -> dict[str, Any]:
    """No disk (nothing boots, nothing to load the CPU) and a bridge on the pod network: not migratable,
    yet asking to live-migrate on eviction."""
    return {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachine",
        "metadata": {"name": UNEVICTABLE},
        "spec": {
            "runStrategy": "Always",
            "template": {
                "spec": {
                    "evictionStrategy": "LiveMigrate",
                    "domain": {
                        "resources": {"requests": {"memory": "64Mi"}},
                        "devices": {"interfaces": [{"name": "default", "bridge": {}}]},
                    },
                    "networks": [{"name": "default", "pod": {}}],
                    "terminationGracePeriodSeconds": 0,
                }
            },
        },
    }


@pytest.fixture(scope="module")
def vms(cluster: Cluster, prometheus: Prometheus, nodes: tuple[str, str]) -> Iterator[None]:
    """Both VMs Running (created together, so the alert's minute passes while the guest boots)."""
    cluster.fresh_namespace(NAMESPACE)
    try:
        for vm in (_unevictable_vm(), _loaded_vm()):
            cluster.kubectl("create", "-n", NAMESPACE, "-f", "-", stdin=json.dumps(vm))
        for name in (UNEVICTABLE, LOADED):
            wait_vmi_phase(cluster, name, NAMESPACE, "Running", timeout=BOOT_TIMEOUT)
        yield
    finally:
        cluster.kubectl("delete", "namespace", NAMESPACE, "--ignore-not-found", "--wait=true", check=False)


def _selector(name: str) -> str:
    return f'namespace="{NAMESPACE}",name="{name}"'


def _value(prometheus: Prometheus, expr: str) -> float | None:
    found = prometheus.query(expr)
    return sum(s.points[-1][1] for s in found) if found else None


def _component_pods(cluster: Cluster) -> Counter[str]:
    """How many pods of each component run."""
    return Counter({component: len(component_pods(cluster, component)) for component in COMPONENTS})


def _healthy_targets(prometheus: Prometheus) -> Counter[str]:
    return Counter(
        component
        for target in prometheus.active_targets()
        for component in COMPONENTS
        if target["labels"].get("pod", "").startswith(f"{component}-") and target["health"] == "up"
    )


def test_every_component_pod_is_a_healthy_target(cluster: Cluster, prometheus: Prometheus) -> None:
    expected = _component_pods(cluster)
    assert all(expected.values()), expected
    first_result(
        f"every component pod scraped ({dict(expected)})",
        lambda: _healthy_targets(prometheus) == expected,
        SERIES_TIMEOUT,
    )
    # The target labels prometheus-operator gives a ServiceMonitor's targets, which KubeVirt's rules use.
    target = next(
        t for t in prometheus.active_targets() if t["labels"].get("pod", "").startswith("virt-handler-")
    )
    assert target["labels"]["namespace"] == "kubevirt"
    assert target["labels"]["job"] == target["labels"]["service"] == "kubevirt-prometheus-metrics"
    assert target["scrapeUrl"].startswith("https://")
    # And kube-state-metrics, whose kube_* series KubeVirt's rules read.
    first_result(
        "kube-state-metrics scraped",
        lambda: (
            [
                t["health"]
                for t in prometheus.active_targets()
                if t["labels"].get("job") == "kube-state-metrics"
            ]
            == ["up"]
        ),
        SERIES_TIMEOUT,
    )


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

    expected = {component: float(count) for component, count in _component_pods(cluster).items()}

    def counted() -> dict[str, float | None]:
        return {c: _value(prometheus, f"kubevirt_{c.replace('-', '_')}_up") for c in COMPONENTS}

    # Each component's pod count, from `up` through KubeVirt's recording rules.
    first_result(f"the recording rules counting {expected}", lambda: counted() == expected, SERIES_TIMEOUT)
    assert _value(prometheus, "kubevirt_virt_operator_leading") == 1.0


def _console_says(cluster: Cluster, name: str, text: str) -> bool:
    vmi = mig.vmi(cluster, NAMESPACE, name)
    pods = mig.launcher_pods(cluster, NAMESPACE, vmi["metadata"]["uid"])
    return any(text in mig.console(cluster, NAMESPACE, pod["metadata"]["name"]) for pod in pods)


@pytest.mark.usefixtures("vms")
def test_guest_cpu_and_network_load_show_in_the_vms_series(cluster: Cluster, prometheus: Prometheus) -> None:
    first_result(
        "the guest's load done",
        lambda: _console_says(cluster, LOADED, "network load done"),
        BOOT_TIMEOUT,
        2.0,
    )
    selector = _selector(LOADED)

    # The busy loop kept a vCPU (and so QEMU's emulation thread) going for 30 s: at least half of that in
    # CPU seconds within the last 3 min, however busy the two host cores were.
    def cpu_seconds() -> float | None:
        value = _value(prometheus, f"increase(kubevirt_vmi_cpu_usage_seconds_total{{{selector}}}[3m])")
        return value if value is not None and value >= BUSY_SECONDS / 2 else None

    first_result("the busy vCPU's seconds", cpu_seconds, SERIES_TIMEOUT, 2.0)

    # 200 echo replies of 1400 bytes of data came back to the guest.
    def received() -> float | None:
        value = _value(prometheus, f"increase(kubevirt_vmi_network_receive_bytes_total{{{selector}}}[3m])")
        return value if value is not None and value >= PINGS * PING_BYTES * 0.9 else None

    first_result("the echo replies' bytes", received, SERIES_TIMEOUT, 2.0)
    resident = _value(prometheus, f"kubevirt_vmi_memory_resident_bytes{{{selector}}}")
    assert resident is not None
    assert resident > 16 * 2**20
    info = prometheus.query(f'kubevirt_vmi_info{{{selector},phase="running"}}')
    assert len(info) == 1, info

    # KubeVirt's phase counts (a recording rule over virt-handler's per-node counts) hold both VMs.
    running = cluster.kubectl_json("get", "vmi", "-A").get("items") or []
    assert isinstance(running, list)
    count = sum(1 for vmi in running if (vmi.get("status") or {}).get("phase") == "Running")
    first_result(
        f"{count} VMIs counted running",
        lambda: _value(prometheus, 'sum(kubevirt_vmi_phase_count{phase="running"})') == count,
        SERIES_TIMEOUT,
        2.0,
    )

    printed = subprocess.run(
        [str(REPO / "hack" / "monitoring"), "vm", LOADED, "-n", NAMESPACE, "--minutes", "5"],
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


@pytest.mark.usefixtures("vms")
def test_a_live_migrations_series_reach_prometheus(cluster: Cluster, prometheus: Prometheus) -> None:
    migration = mig.create_migration(cluster, NAMESPACE, LOADED)
    assert mig.phase(mig.wait_phase(cluster, NAMESPACE, migration, mig.FINAL_PHASES)) == "Succeeded"
    by_migration = f'{_selector(LOADED)},migration_name="{migration}"'
    first_result(
        "the migration's end recorded",
        lambda: prometheus.query(
            f'kubevirt_vmi_migration_end_time_seconds{{{by_migration},status="succeeded"}}'
        ),
        SERIES_TIMEOUT,
        2.0,
    )
    assert prometheus.query(f"kubevirt_vmi_migration_start_time_seconds{{{by_migration}}}")
    outcome = f'kubevirt_vmi_migration_succeeded{{namespace="{NAMESPACE}",vmi="{LOADED}",vmim="{migration}"}}'
    assert _value(prometheus, outcome) == 1.0


@pytest.mark.usefixtures("vms")
def test_a_hung_virt_handler_is_seen_by_kubevirts_rules(cluster: Cluster, prometheus: Prometheus) -> None:
    node = mig.vmi(cluster, NAMESPACE, LOADED)["status"]["nodeName"]
    handlers = _value(prometheus, "kubevirt_virt_handler_up")
    assert handlers == 2.0
    found = subprocess.run(
        ["pgrep", "-f", f"virt-handler --port 8443 --hostname-override {re.escape(node)} "],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.split()
    assert len(found) == 1, found
    pid = int(found[0])

    def pending(alert: str, **labels: str) -> bool:
        return any(
            a["labels"].get("alertname") == alert
            and a["state"] in ("pending", "firing")
            and all(a["labels"].get(k) == v for k, v in labels.items())
            for a in prometheus.alerts()
        )

    try:
        subprocess.run(["kill", "-STOP", str(pid)], check=True)
        first_result(
            "kubevirt_virt_handler_up counting one less",
            lambda: _value(prometheus, "kubevirt_virt_handler_up") == handlers - 1,
            HUNG_TIMEOUT,
            2.0,
        )
        first_result(
            "VirtHandlerDaemonSetRolloutFailing pending",
            lambda: pending("VirtHandlerDaemonSetRolloutFailing", daemonset="virt-handler"),
            HUNG_TIMEOUT,
            2.0,
        )
        first_result(
            "OrphanedVirtualMachineInstances pending for the node",
            lambda: pending("OrphanedVirtualMachineInstances", node=node),
            HUNG_TIMEOUT,
            2.0,
        )
    finally:
        subprocess.run(["kill", "-CONT", str(pid)], check=False)
    cluster.kubectl("rollout", "status", "daemonset/virt-handler", "-n", "kubevirt", "--timeout=180s")
    first_result(
        "the alerts resolved",
        lambda: (
            not pending("VirtHandlerDaemonSetRolloutFailing")
            and not pending("OrphanedVirtualMachineInstances", node=node)
        ),
        SERIES_TIMEOUT,
        2.0,
    )


@pytest.mark.usefixtures("vms")
def test_a_vm_that_cannot_be_evicted_fires_vm_cannot_be_evicted(prometheus: Prometheus) -> None:
    def firing() -> dict[str, Any] | None:
        return next(
            (
                alert
                for alert in prometheus.alerts()
                if alert["labels"].get("alertname") == "VMCannotBeEvicted"
                and alert["labels"].get("name") == UNEVICTABLE
                and alert["state"] == "firing"
            ),
            None,
        )

    alert = first_result("VMCannotBeEvicted firing", firing, ALERT_TIMEOUT, 2.0)
    assert alert["labels"]["namespace"] == NAMESPACE
    assert alert["labels"]["severity"] == "warning"
    assert alert["annotations"]["runbook_url"].endswith("/VMCannotBeEvicted")
    # The migratable guest raises nothing of the kind.
    assert not any(
        a["labels"].get("alertname") == "VMCannotBeEvicted" and a["labels"].get("name") == LOADED
        for a in prometheus.alerts()
    )
