"""The local cluster's stand-in for prometheus-operator: KubeVirt's ServiceMonitor and PrometheusRule as
Prometheus configuration, and the VM series table."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml

from kubevirt.virt_operator.resource.monitoring import prometheus_rule, service_monitor

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "hack" / "cluster"))

from localcluster.prometheus import (
    MonitoringError,
    Prometheus,
    configuration,
    rule_file,
    scrape_configs,
)
from localcluster.vm_series import human, render, selector, sparkline

KUBECONFIG = Path("/state/admin.kubeconfig")


def test_kubevirts_service_monitor_becomes_one_endpointslice_job() -> None:
    [job] = scrape_configs(service_monitor("kubevirt", "monitoring"), KUBECONFIG)
    assert job["job_name"] == "serviceMonitor/monitoring/prometheus-kubevirt-rules/0"
    assert job["scheme"] == "https"
    assert job["honor_labels"] is True
    assert job["tls_config"] == {"insecure_skip_verify": True}
    [discovery] = job["kubernetes_sd_configs"]
    assert discovery == {
        "role": "endpointslice",
        "kubeconfig_file": str(KUBECONFIG),
        "namespaces": {"names": ["kubevirt"]},
    }
    keep = [r for r in job["relabel_configs"] if r.get("action") == "keep"]
    assert keep == [
        {
            "action": "keep",
            "source_labels": [
                "__meta_kubernetes_service_label_prometheus_kubevirt_io",
                "__meta_kubernetes_service_labelpresent_prometheus_kubevirt_io",
            ],
            "regex": "(true);true",
        },
        {
            "action": "keep",
            "source_labels": ["__meta_kubernetes_endpointslice_port_name"],
            "regex": "metrics",
        },
    ]
    targets = {
        r["target_label"]: r.get("source_labels", r.get("replacement")) for r in job["relabel_configs"][2:]
    }
    assert targets["pod"] == ["__meta_kubernetes_pod_name"]
    assert targets["namespace"] == ["__meta_kubernetes_namespace"]
    assert targets["job"] == ["__meta_kubernetes_service_name"]
    assert targets["endpoint"] == "metrics"


def test_a_monitor_of_its_own_namespace_and_plain_http() -> None:
    monitor = {
        "metadata": {"namespace": "apps", "name": "web"},
        "spec": {
            "selector": {"matchLabels": {"app": "a.b"}},
            "endpoints": [{"port": "http", "interval": "5s"}],
        },
    }
    [job] = scrape_configs(monitor, KUBECONFIG)
    assert job["kubernetes_sd_configs"][0]["namespaces"] == {"names": ["apps"]}
    assert job["scheme"] == "http"
    assert job["scrape_interval"] == "5s"
    assert "tls_config" not in job
    assert job["relabel_configs"][0]["regex"] == r"(a\.b);true"  # a label value is matched literally


def test_what_the_translation_does_not_cover_is_refused_with_its_field() -> None:
    expressions = {
        "metadata": {"namespace": "apps", "name": "web"},
        "spec": {"selector": {"matchExpressions": [{"key": "app", "operator": "Exists"}]}, "endpoints": []},
    }
    with pytest.raises(MonitoringError, match=r"servicemonitor apps/web: spec\.selector\.matchExpressions"):
        scrape_configs(expressions, KUBECONFIG)
    unnamed = {
        "metadata": {"namespace": "apps", "name": "web"},
        "spec": {"endpoints": [{"targetPort": 8080}]},
    }
    with pytest.raises(MonitoringError, match=r"spec\.endpoints\[0\]\.port"):
        scrape_configs(unnamed, KUBECONFIG)


def test_kubevirts_prometheus_rule_is_a_rule_file_with_every_group() -> None:
    rule = prometheus_rule("kubevirt")
    loaded = yaml.safe_load(rule_file(rule))
    assert loaded == {"groups": rule["spec"]["groups"]}
    config = configuration(
        [service_monitor("kubevirt", "monitoring")], [Path("/r/kubevirt.yaml")], KUBECONFIG
    )
    assert config["rule_files"] == ["/r/kubevirt.yaml"]
    assert len(config["scrape_configs"]) == 1


def test_prometheus_that_does_not_answer_is_a_clear_error() -> None:
    with pytest.raises(MonitoringError, match="does not answer"):
        Prometheus("http://127.0.0.1:9").query("up")


def test_the_vm_selector_escapes_quotes() -> None:
    assert selector("ns", 'a"b') == 'namespace="ns",name="a\\"b"'


def test_sparkline_and_units() -> None:
    assert sparkline([0, 7, 14]) == "▁▅█"
    assert sparkline([3, 3]) == "▁▁"
    assert human(3 * 2**20, "bytes") == "3.0 MiB"
    assert human(512, "bytes/s") == "512.0 B/s"
    assert human(0.25, "cores") == "0.250 cores"


def test_no_series_says_so() -> None:
    assert "no series for VMI ns/vm" in render([], "ns", "vm", 10)


def test_a_cluster_with_prometheus_beside_it_is_still_running(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """hack/monitoring's processes are recorded with the cluster's (so cluster-down stops them), and must
    not make cluster-up think the cluster incomplete and start it afresh (wiping what is installed)."""
    import json
    import os
    from types import SimpleNamespace

    from localcluster import cluster, processes, prometheus
    from localcluster.layout import Layout

    layout = Layout(state=tmp_path / "state", cache=tmp_path / "cache")
    names = ["etcd", "kube-apiserver"]
    monkeypatch.setattr(cluster.components, "processes", lambda _: [SimpleNamespace(name=n) for n in names])
    monkeypatch.setattr(cluster.csi_deploy, "processes", lambda _: [])
    monkeypatch.setattr(cluster.dns, "process", lambda _: SimpleNamespace(name="coredns"))
    monkeypatch.setattr(cluster.readiness, "url_ok", lambda *_: True)
    me = processes.Record(name="", pid=os.getpid(), start_time=processes._start_time(os.getpid()) or 0)

    def record(name: str) -> None:
        layout.pids.mkdir(parents=True, exist_ok=True)
        (layout.pids / f"{name}.json").write_text(json.dumps({**me.__dict__, "name": name}))

    for name in [*names, "coredns"]:
        record(name)
    assert cluster.running(layout)
    record(prometheus.PROCESS_NAME)
    record(prometheus.KSM_PROCESS_NAME)
    assert cluster.running(layout)
    record("something-else")
    assert not cluster.running(layout)
