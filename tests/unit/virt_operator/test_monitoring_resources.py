"""KubeVirt v1.6.6's monitoring objects: the PrometheusRule's recording rules and alerts
(``pkg/monitoring/rules``), the ServiceMonitor and the RBAC for Prometheus' service account."""

from __future__ import annotations

from typing import Any

import pytest

from kubevirt.virt_operator.resource import monitoring
from kubevirt.virt_operator.resource.services import PROMETHEUS_SERVICE, services

JSON = dict[str, Any]
NS = "my-kubevirt"
RUNBOOKS = "https://kubevirt.io/monitoring/runbooks/"

# Counted in KubeVirt v1.6.6's alerts/*.go and recordingrules/*.go.
KUBEVIRT_ALERT_COUNT = 26
KUBEVIRT_RECORDING_RULE_COUNT = 24  # kubevirt_memory_delta_from_requested_bytes has two

# (alert, for, severity, operator_health_impact), as KubeVirt declares them.
SAMPLE_ALERTS = [
    ("VirtAPIDown", "10m", "critical", "critical"),
    ("LowVirtAPICount", "60m", "warning", "warning"),
    ("KubeVirtNoAvailableNodesToRunVMs", "5m", "warning", "critical"),
    ("KubeVirtDeprecatedAPIRequested", None, "info", "none"),
    ("VirtHandlerDaemonSetRolloutFailing", "15m", "warning", "warning"),
    ("OutdatedVirtualMachineInstanceWorkloads", "24h", "warning", "none"),
    ("VMCannotBeEvicted", "1m", "warning", "none"),
    ("GuestVCPUQueueHighCritical", None, "critical", "none"),
    ("NoLeadingVirtOperator", "10m", "critical", "critical"),
]


def _groups(rule: JSON) -> dict[str, list[JSON]]:
    return {group["name"]: group["rules"] for group in rule["spec"]["groups"]}


def _alerts(namespace: str = NS) -> dict[str, JSON]:
    return {a["alert"]: a for a in _groups(monitoring.prometheus_rule(namespace))["alerts.rules"]}


def _records(namespace: str = NS) -> list[JSON]:
    return _groups(monitoring.prometheus_rule(namespace))["recordingRules.rules"]


def test_prometheus_rule_object() -> None:
    rule = monitoring.prometheus_rule(NS)
    assert rule["apiVersion"] == "monitoring.coreos.com/v1"
    assert rule["kind"] == "PrometheusRule"
    assert rule["metadata"] == {
        "name": "prometheus-kubevirt-rules",
        "namespace": NS,
        "labels": {"prometheus.kubevirt.io": "true", "k8s-app": "kubevirt"},
    }
    assert [g["name"] for g in rule["spec"]["groups"]] == ["recordingRules.rules", "alerts.rules"]


def test_counts_match_kubevirt() -> None:
    assert len(_alerts()) == KUBEVIRT_ALERT_COUNT
    assert len(_records()) == KUBEVIRT_RECORDING_RULE_COUNT


@pytest.mark.parametrize(("name", "for_", "severity", "impact"), SAMPLE_ALERTS)
def test_sample_alerts(name: str, for_: str | None, severity: str, impact: str) -> None:
    alert = _alerts()[name]
    assert alert.get("for") == for_
    assert alert["labels"] == {
        "severity": severity,
        "operator_health_impact": impact,
        "kubernetes_operator_part_of": "kubevirt",
        "kubernetes_operator_component": "kubevirt",
    }
    assert alert["annotations"]["runbook_url"] == RUNBOOKS + name


def test_alert_texts_and_expressions() -> None:
    alerts = _alerts()
    assert alerts["VirtApiRESTErrorsBurst"]["annotations"]["summary"] == (
        "More than 80% of the rest calls failed in virt-api for the last 5 minutes"
    )
    assert alerts["VirtApiRESTErrorsBurst"]["expr"] == (
        'sum ( rate ( kubevirt_rest_client_requests_total{namespace="my-kubevirt",pod=~"virt-api-.*",'
        'code=~"(4|5)[0-9][0-9]"} [5m] ) )  /  '
        'sum ( rate ( kubevirt_rest_client_requests_total{namespace="my-kubevirt",pod=~"virt-api-.*"}'
        " [5m] ) ) >= 0.8"
    )
    assert alerts["LowKVMNodesCount"]["annotations"]["description"] == (
        "Low number of nodes with KVM resource available."
    )
    assert alerts["LowReadyVirtControllersCount"]["expr"] == (
        "kubevirt_virt_controller_ready <  kubevirt_virt_controller_up"
    )
    assert "description" not in alerts["VirtAPIDown"]["annotations"]


def test_every_alert_has_summary_and_runbook() -> None:
    for name, alert in _alerts().items():
        assert alert["annotations"]["summary"]
        assert alert["annotations"]["runbook_url"] == RUNBOOKS + name
        assert alert["expr"]


def test_every_recording_rule_has_record_and_expr() -> None:
    for rule in _records():
        assert set(rule) <= {"record", "expr", "labels"}
        assert rule["record"]
        assert rule["expr"]


def test_rules_are_sorted_like_kubevirt() -> None:
    records = _records()
    keys = [f"{r['record']}:{r['expr']}" for r in records]
    assert keys == sorted(keys)
    names = list(_alerts())
    assert names == sorted(names)


def test_namespace_is_substituted() -> None:
    records = {r["record"]: r["expr"] for r in _records("other-ns")}
    assert records["kubevirt_virt_api_up"] == "sum(up{namespace='other-ns', pod=~'virt-api-.*'}) or vector(0)"
    assert records["kubevirt_virt_operator_ready"] == (
        "sum(kube_pod_status_ready{pod=~'virt-operator-.*', condition='true', namespace='other-ns'}"
        " * on (pod) kubevirt_virt_operator_ready_status{namespace='other-ns'}) or vector(0)"
    )
    alerts = _alerts("other-ns")
    assert alerts["LowVirtOperatorCount"]["expr"] == (
        "kubevirt_virt_operator_up / on() "
        "kube_deployment_spec_replicas{deployment='virt-operator', namespace='other-ns'} < 0.75"
    )
    assert alerts["VirtHandlerDaemonSetRolloutFailing"]["expr"] == (
        "(kube_daemonset_status_number_ready{namespace='other-ns', daemonset='virt-handler'}"
        " - kube_daemonset_status_desired_number_scheduled{namespace='other-ns', daemonset='virt-handler'})"
        " != 0"
    )
    text = str(monitoring.prometheus_rule("other-ns"))
    assert NS not in text
    # Namespace-free expressions do not change with the namespace.
    assert alerts["VirtAPIDown"]["expr"] == _alerts()["VirtAPIDown"]["expr"]


def test_memory_delta_rules_carry_their_reason() -> None:
    delta = "kubevirt_memory_delta_from_requested_bytes"
    reasons = sorted(r["labels"]["reason"] for r in _records() if r["record"] == delta)
    assert reasons == ["memory_rss_delta_from_request", "memory_working_set_delta_from_request"]
    assert all("labels" not in r for r in _records() if r["record"] == "kubevirt_vmi_phase_count")


def test_recording_rule_names() -> None:
    names = monitoring.recording_rule_names()
    assert names == sorted(set(names))
    assert len(names) == KUBEVIRT_RECORDING_RULE_COUNT - 1
    expected = {
        "kubevirt_vmi_phase_count",
        "kubevirt_number_of_vms",
        "cluster:kubevirt_non_schedulable_nodes:sum",
    }
    assert expected <= set(names)
    assert [n for n in names if n.startswith("kubevirt_virt_")] == [
        "kubevirt_virt_api_up",
        "kubevirt_virt_controller_ready",
        "kubevirt_virt_controller_up",
        "kubevirt_virt_handler_up",
        "kubevirt_virt_operator_leading",
        "kubevirt_virt_operator_ready",
        "kubevirt_virt_operator_up",
    ]
    assert {r["record"] for r in _records()} == set(names)


def test_recording_rule_help_and_type() -> None:
    by_name = {r.name: r for r in monitoring.recording_rules(NS)}
    assert by_name["kubevirt_vm_created_total"].type == "Counter"
    assert by_name["kubevirt_vmi_vcpu_count"].type == "Gauge"
    assert by_name["kubevirt_vmi_memory_used_bytes"].help == "Amount of `used` memory as seen by the domain."


def test_runbook_template() -> None:
    assert monitoring.runbook_url_template({}) == RUNBOOKS + "%s"
    custom = "https://example.com/runbooks/%s.md"
    assert monitoring.runbook_url_template({"RUNBOOK_URL_TEMPLATE": custom}) == custom
    alert = _groups(monitoring.prometheus_rule(NS, custom))["alerts.rules"][0]
    assert alert["annotations"]["runbook_url"] == f"https://example.com/runbooks/{alert['alert']}.md"
    with pytest.raises(ValueError, match="exactly 1"):
        monitoring.runbook_url_template({"RUNBOOK_URL_TEMPLATE": "https://example.com/runbooks"})
    with pytest.raises(ValueError, match="exactly 1"):
        monitoring.prometheus_rule(NS, "%s/%s")


def test_service_monitor_selects_the_metrics_service() -> None:
    monitor = monitoring.service_monitor(NS, "monitoring")
    assert monitor["apiVersion"] == "monitoring.coreos.com/v1"
    assert monitor["kind"] == "ServiceMonitor"
    assert monitor["metadata"] == {
        "name": "prometheus-kubevirt-rules",
        "namespace": "monitoring",
        "labels": {
            "openshift.io/cluster-monitoring": "",
            "prometheus.kubevirt.io": "true",
            "k8s-app": "kubevirt",
        },
    }
    spec = monitor["spec"]
    assert spec["namespaceSelector"] == {"matchNames": [NS]}
    (service,) = [s for s in services(NS) if s["metadata"]["name"] == PROMETHEUS_SERVICE]
    selector = spec["selector"]["matchLabels"]
    assert selector.items() <= service["metadata"]["labels"].items()
    (endpoint,) = spec["endpoints"]
    assert endpoint["port"] in [p["name"] for p in service["spec"]["ports"]]
    assert endpoint["scheme"] == "https"
    assert endpoint["honorLabels"] is True
    assert endpoint["tlsConfig"]["insecureSkipVerify"] is True
    verified = monitoring.service_monitor(NS, "monitoring", insecure_skip_verify=False)
    assert "insecureSkipVerify" not in verified["spec"]["endpoints"][0]["tlsConfig"]


def test_monitoring_rbac() -> None:
    role, binding = monitoring.monitoring_rbac(NS, "openshift-monitoring")
    assert role["kind"] == "Role"
    assert role["metadata"] == {"name": "kubevirt-monitoring", "namespace": NS, "labels": {"kubevirt.io": ""}}
    assert role["rules"] == [
        {"apiGroups": [""], "resources": ["services", "endpoints", "pods"], "verbs": ["get", "list", "watch"]}
    ]
    assert binding["kind"] == "RoleBinding"
    assert binding["metadata"] == role["metadata"]
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "Role",
        "name": "kubevirt-monitoring",
    }
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "namespace": "openshift-monitoring", "name": "prometheus-k8s"}
    ]
    _, custom = monitoring.monitoring_rbac(NS, "mon", "my-prometheus")
    assert custom["subjects"][0]["name"] == "my-prometheus"


def test_monitoring_objects() -> None:
    objects = monitoring.monitoring_objects(NS, "monitoring")
    assert [o["kind"] for o in objects] == ["Role", "RoleBinding", "ServiceMonitor", "PrometheusRule"]
    assert objects[2]["metadata"]["namespace"] == "monitoring"
    assert objects[3]["metadata"]["namespace"] == NS
    elsewhere = monitoring.monitoring_objects(NS, "monitoring", service_monitor_namespace="sm-ns")
    assert elsewhere[2]["metadata"]["namespace"] == "sm-ns"
    assert elsewhere[1]["subjects"][0]["namespace"] == "monitoring"
