"""KubeVirt's monitoring objects as data: the PrometheusRule with its recording rules and alerts
(KubeVirt's ``pkg/monitoring/rules``), the ServiceMonitor scraping the ``kubevirt-prometheus-metrics``
Service, and the Role/RoleBinding that let Prometheus' service account discover the scrape targets
(``components/prometheus.go``, ``rbac/servicemonitor.go``).

Several expressions name the install namespace, so everything is generated per namespace. virt-operator
installs these only when a monitoring namespace holding the Prometheus service account exists.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from kubevirt.virt_operator.resource.rbac import RBAC_API_VERSION, metadata
from kubevirt.virt_operator.resource.services import METRICS_PORT_NAME, PROMETHEUS_LABEL
from kubevirt_api.view import JSON

MONITORING_API_VERSION = "monitoring.coreos.com/v1"
# KubeVirt names the ServiceMonitor like the PrometheusRule.
PROMETHEUS_RULE_NAME = "prometheus-kubevirt-rules"
SERVICE_MONITOR_NAME = PROMETHEUS_RULE_NAME
MONITOR_RBAC_NAME = "kubevirt-monitoring"

DEFAULT_MONITOR_ACCOUNT = "prometheus-k8s"
# Looked up in this order; the first one holding the monitor account wins.
DEFAULT_MONITOR_NAMESPACES = ("openshift-monitoring", "monitoring")

DEFAULT_RUNBOOK_URL_TEMPLATE = "https://kubevirt.io/monitoring/runbooks/%s"
RUNBOOK_URL_TEMPLATE_ENV = "RUNBOOK_URL_TEMPLATE"

RECORDING_RULES_GROUP = "recordingRules.rules"
ALERTS_GROUP = "alerts.rules"

_K8S_APP = {"k8s-app": "kubevirt"}
_PART_OF_LABEL = "kubernetes_operator_part_of"
_COMPONENT_LABEL = "kubernetes_operator_component"
_SEVERITY_LABEL = "severity"
_HEALTH_IMPACT_LABEL = "operator_health_impact"

GAUGE = "Gauge"
COUNTER = "Counter"


@dataclass(frozen=True)
class RecordingRule:
    """A metric Prometheus computes: its name, PromQL, the help and type metrics.md documents, and the
    constant labels it is recorded with."""

    name: str
    expr: str
    help: str
    type: str = GAUGE
    labels: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Alert:
    name: str
    expr: str
    severity: str
    health_impact: str
    summary: str
    description: str = ""
    for_: str = ""  # empty: fires as soon as the expression holds


# --- recording rules ---------------------------------------------------------------------------------

_MEMORY_DELTA_HELP = (
    "The delta between the pod with highest memory working set or rss and its requested memory for each "
    "container, virt-controller, virt-handler, virt-api and virt-operator."
)
_VIRT_CONTAINERS = "virt-controller|virt-api|virt-handler|virt-operator"


def _memory_delta(source_metric: str, reason: str) -> RecordingRule:
    return RecordingRule(
        "kubevirt_memory_delta_from_requested_bytes",
        "topk by(container)(1,max by(container, namespace, node)("
        f'{source_metric}{{container=~"{_VIRT_CONTAINERS}"}}'
        f"  - on(pod) group_left(node) (kube_pod_container_resource_requests{{ "
        f'container=~"{_VIRT_CONTAINERS}",resource="memory"}})))',
        _MEMORY_DELTA_HELP,
        labels={"reason": reason},
    )


_NAMESPACE_FREE_RECORDING_RULES: tuple[RecordingRule, ...] = (
    RecordingRule(
        "kubevirt_api_request_deprecated_total",
        "group by (group,version,resource,subresource)"
        ' (apiserver_requested_deprecated_apis{group="kubevirt.io"})'
        " * on (group,version,resource,subresource) group_right()"
        " sum by (group,version,resource,subresource,verb) (apiserver_request_total)",
        "The total number of requests to deprecated KubeVirt APIs.",
        COUNTER,
    ),
    RecordingRule(
        "cluster:kubevirt_non_schedulable_nodes:sum",
        "sum (count by (node) (kube_node_role{role=~'arbiter'})) or vector(0)",
        "The number of non-schedulable nodes in the cluster.",
    ),
    RecordingRule(
        "kubevirt_allocatable_nodes",
        "count(count (kube_node_status_allocatable) by (node)) - cluster:kubevirt_non_schedulable_nodes:sum",
        "The number of allocatable nodes in the cluster.",
    ),
    RecordingRule(
        "kubevirt_nodes_with_kvm",
        'count(kube_node_status_allocatable{resource="devices_kubevirt_io_kvm"} != 0) or vector(0)',
        "The number of nodes in the cluster that have the devices.kubevirt.io/kvm resource available.",
    ),
    _memory_delta("container_memory_working_set_bytes", "memory_working_set_delta_from_request"),
    _memory_delta("container_memory_rss", "memory_rss_delta_from_request"),
    RecordingRule(
        "kubevirt_vm_container_free_memory_bytes_based_on_working_set_bytes",
        "sum by(pod, container, namespace) (kube_pod_container_resource_requests{pod=~'virt-launcher-.*', "
        "container='compute', resource='memory'}- on(pod,container, namespace) "
        "max by(pod, container, namespace) "
        "(container_memory_working_set_bytes{pod=~'virt-launcher-.*', container='compute'}))",
        "The current available memory of the VM containers based on the working set.",
    ),
    RecordingRule(
        "kubevirt_vm_container_free_memory_bytes_based_on_rss",
        "sum by(pod, container, namespace) (kube_pod_container_resource_requests{pod=~'virt-launcher-.*', "
        "container='compute', resource='memory'}- on(pod,container, namespace) "
        "container_memory_rss{pod=~'virt-launcher-.*', container='compute'})",
        "The current available memory of the VM containers based on the rss.",
    ),
    RecordingRule(
        "kubevirt_number_of_vms",
        "sum by (namespace) (count by (name,namespace) ("
        "kubevirt_vm_error_status_last_transition_timestamp_seconds"
        " + kubevirt_vm_migrating_status_last_transition_timestamp_seconds"
        " + kubevirt_vm_non_running_status_last_transition_timestamp_seconds"
        " + kubevirt_vm_running_status_last_transition_timestamp_seconds"
        " + kubevirt_vm_starting_status_last_transition_timestamp_seconds))",
        "The number of VMs in the cluster by namespace.",
    ),
    RecordingRule(
        "kubevirt_vm_created_total",
        "sum by (namespace) (kubevirt_vm_created_by_pod_total)",
        "The total number of VMs created by namespace, since install.",
        COUNTER,
    ),
    RecordingRule(
        "kubevirt_vmi_phase_count",
        "sum by (node, phase, os, workload, flavor, instance_type, preference, guest_os_kernel_release, "
        "guest_os_machine, guest_os_arch, guest_os_name, guest_os_version_id, vmi_pod) (kubevirt_vmi_info)",
        "Sum of VMIs per phase and node. `phase` can be one of the following: [`Pending`, `Scheduling`, "
        "`Scheduled`, `Running`, `Succeeded`, `Failed`, `Unknown`].",
    ),
    RecordingRule(
        "kubevirt_vmi_memory_used_bytes",
        "kubevirt_vmi_memory_available_bytes-kubevirt_vmi_memory_usable_bytes",
        "Amount of `used` memory as seen by the domain.",
    ),
    RecordingRule(
        "kubevirt_vmi_vcpu_count",
        "count by (namespace, name, node) (kubevirt_vmi_vcpu_seconds_total)",
        "The number of the VMI vCPUs.",
    ),
    RecordingRule(
        "kubevirt_vmi_guest_vcpu_queue",
        "clamp_min(kubevirt_vmi_guest_load_1m - kubevirt_vmi_vcpu_count, 0)",
        "Guest queue length.",
    ),
    RecordingRule(
        "kubevirt_vmsnapshot_persistentvolumeclaim_labels",
        "label_replace(label_replace(kube_persistentvolumeclaim_labels{"
        "label_restore_kubevirt_io_source_vm_name!='', "
        "label_restore_kubevirt_io_source_vm_namespace!=''} == 1, 'vm_namespace', '$1', "
        "'label_restore_kubevirt_io_source_vm_namespace', '(.*)'), 'vm_name', '$1', "
        "'label_restore_kubevirt_io_source_vm_name', '(.*)')",
        "Returns the labels of the persistent volume claims that are used for restoring virtual machines.",
    ),
    RecordingRule(
        "kubevirt_vmsnapshot_disks_restored_from_source",
        "sum by(vm_name, vm_namespace) (kubevirt_vmsnapshot_persistentvolumeclaim_labels)",
        "Returns the total number of virtual machine disks restored from the source virtual machine.",
    ),
    RecordingRule(
        "kubevirt_vmsnapshot_disks_restored_from_source_bytes",
        "sum by(vm_name, vm_namespace) (kube_persistentvolumeclaim_resource_requests_storage_bytes"
        " * on(persistentvolumeclaim, namespace) group_left(vm_name, vm_namespace)"
        " kubevirt_vmsnapshot_persistentvolumeclaim_labels)",
        "Returns the amount of space in bytes restored from the source virtual machine.",
    ),
)


def _component_recording_rules(ns: str) -> list[RecordingRule]:
    """The health of KubeVirt's own pods, which live in the install namespace."""
    return [
        RecordingRule(
            "kubevirt_virt_api_up",
            f"sum(up{{namespace='{ns}', pod=~'virt-api-.*'}}) or vector(0)",
            "The number of virt-api pods that are up.",
        ),
        RecordingRule(
            "kubevirt_virt_controller_up",
            f"sum(up{{pod=~'virt-controller-.*', namespace='{ns}'}}) or vector(0)",
            "The number of virt-controller pods that are up.",
        ),
        RecordingRule(
            "kubevirt_virt_controller_ready",
            f"sum(kubevirt_virt_controller_ready_status{{namespace='{ns}'}}) or vector(0)",
            "The number of virt-controller pods that are ready.",
        ),
        RecordingRule(
            "kubevirt_virt_operator_up",
            f"sum(up{{namespace='{ns}', pod=~'virt-operator-.*'}}) or vector(0)",
            "The number of virt-operator pods that are up.",
        ),
        RecordingRule(
            "kubevirt_virt_operator_ready",
            f"sum(kube_pod_status_ready{{pod=~'virt-operator-.*', condition='true', namespace='{ns}'}}"
            f" * on (pod) kubevirt_virt_operator_ready_status{{namespace='{ns}'}}) or vector(0)",
            "The number of virt-operator pods that are ready.",
        ),
        RecordingRule(
            "kubevirt_virt_operator_leading",
            f"sum(kubevirt_virt_operator_leading_status{{namespace='{ns}'}})",
            "The number of virt-operator pods that are leading.",
        ),
        RecordingRule(
            "kubevirt_virt_handler_up",
            f"sum(up{{pod=~'virt-handler-.*', namespace='{ns}'}}) or vector(0)",
            "The number of virt-handler pods that are up.",
        ),
    ]


def recording_rules(namespace: str) -> list[RecordingRule]:
    """Every recording rule, in the order the PrometheusRule lists them (by name, then expression)."""
    unique = {
        f"{r.name}:{r.expr}": r
        for r in [*_NAMESPACE_FREE_RECORDING_RULES, *_component_recording_rules(namespace)]
    }
    return [unique[key] for key in sorted(unique)]


def recording_rule_names() -> list[str]:
    """The distinct metric names the recording rules produce, sorted (one name may have several rules)."""
    return sorted({rule.name for rule in recording_rules("")})


# --- alerts ------------------------------------------------------------------------------------------


def _rest_error_ratio(ns: str, pod: str) -> str:
    """Share of a component's REST calls that failed with 4xx/5xx over five minutes."""
    requests, codes, minutes = "kubevirt_rest_client_requests_total", "(4|5)[0-9][0-9]", 5
    return (
        f'sum ( rate ( {requests}{{namespace="{ns}",pod=~"{pod}-.*",code=~"{codes}"}} [{minutes}m] ) )  /  '
        f'sum ( rate ( {requests}{{namespace="{ns}",pod=~"{pod}-.*"}} [{minutes}m] ) )'
    )


def _rest_errors_burst(name: str, ns: str, pod: str) -> Alert:
    return Alert(
        name,
        _rest_error_ratio(ns, pod) + " >= 0.8",
        "critical",
        "critical",
        f"More than 80% of the rest calls failed in {pod} for the last 5 minutes",
        for_="5m",
    )


def _low_count(name: str, up_metric: str, ns: str, deployment: str, summary: str, for_: str) -> Alert:
    replicas = f"kube_deployment_spec_replicas{{deployment='{deployment}', namespace='{ns}'}}"
    expr = f"{up_metric} / on() {replicas} < 0.75"
    return Alert(name, expr, "warning", "warning", summary, for_=for_)


def _deprecated_api_expr() -> str:
    requests = 'kubevirt_api_request_deprecated_total{verb!~"LIST|WATCH|DELETE"}'
    return (
        f"sum by (resource,group,version) ((round(increase({requests}[10m])) > 0 and {requests} offset 10m)"
        f" or ({requests} != 0 unless {requests} offset 10m))"
    )


_NAMESPACE_FREE_ALERTS: tuple[Alert, ...] = (
    Alert(
        "LowKVMNodesCount",
        "(kubevirt_allocatable_nodes > 1) and (kubevirt_nodes_with_kvm < 2)",
        "warning",
        "warning",
        "At least two nodes with kvm resource required for VM live migration.",
        "Low number of nodes with KVM resource available.",
        for_="5m",
    ),
    Alert(
        "KubeVirtNoAvailableNodesToRunVMs",
        "((sum(kube_node_status_allocatable{resource='devices_kubevirt_io_kvm'}) or on() vector(0)) == 0"
        " and (sum(kubevirt_configuration_emulation_enabled) or on() vector(0)) == 0)"
        " or (sum(kube_node_labels{label_kubevirt_io_schedulable='true'}) or on() vector(0)) == 0",
        "warning",
        "critical",
        "There are no available nodes in the cluster to run VMs.",
        for_="5m",
    ),
    Alert(
        "VirtAPIDown",
        "kubevirt_virt_api_up == 0",
        "critical",
        "critical",
        "All virt-api servers are down.",
        for_="10m",
    ),
    Alert(
        "KubeVirtDeprecatedAPIRequested",
        _deprecated_api_expr(),
        "info",
        "none",
        "Detected {{ $value }} requests in the last 10 minutes.",
        "Detected requests to the deprecated"
        " {{ $labels.resource }}.{{ $labels.group }}/{{ $labels.version }} API.",
    ),
    Alert(
        "LowReadyVirtControllersCount",
        "kubevirt_virt_controller_ready <  kubevirt_virt_controller_up",
        "warning",
        "warning",
        "Some virt controllers are running but not ready.",
        for_="10m",
    ),
    Alert(
        "NoReadyVirtController",
        "kubevirt_virt_controller_ready == 0",
        "critical",
        "critical",
        "No ready virt-controller was detected for the last 10 min.",
        for_="10m",
    ),
    Alert(
        "VirtControllerDown",
        "kubevirt_virt_controller_up == 0",
        "critical",
        "critical",
        "No running virt-controller was detected for the last 10 min.",
        for_="10m",
    ),
    Alert(
        "VirtOperatorDown",
        "kubevirt_virt_operator_up == 0",
        "critical",
        "critical",
        "All virt-operator servers are down.",
        for_="10m",
    ),
    Alert(
        "LowReadyVirtOperatorsCount",
        "kubevirt_virt_operator_ready <  kubevirt_virt_operator_up",
        "warning",
        "warning",
        "Some virt-operators are running but not ready.",
        for_="10m",
    ),
    Alert(
        "NoReadyVirtOperator",
        "kubevirt_virt_operator_ready == 0",
        "critical",
        "critical",
        "No ready virt-operator was detected for the last 10 min.",
        for_="10m",
    ),
    Alert(
        "NoLeadingVirtOperator",
        "kubevirt_virt_operator_leading == 0",
        "critical",
        "critical",
        "No leading virt-operator was detected for the last 10 min.",
        for_="10m",
    ),
    Alert(
        "OrphanedVirtualMachineInstances",
        "(((max by (node) (kube_pod_status_ready{condition='true',pod=~'virt-handler.*'}"
        " * on(pod) group_left(node) max by(pod,node)(kube_pod_info{pod=~'virt-handler.*',node!=''})) ) == 1)"
        " or (count by (node)( kube_pod_info{pod=~'virt-launcher.*',node!=''})*0)) == 0",
        "warning",
        "none",
        "No ready virt-handler pod detected on node {{ $labels.node }}"
        " with running vmis for more than 10 minutes",
        for_="10m",
    ),
    Alert(
        "VMCannotBeEvicted",
        "kubevirt_vmi_non_evictable * on(name, namespace) group_left()"
        " kubevirt_vmi_info{phase='running'} == 1",
        "warning",
        "none",
        "The VM's eviction strategy is set to Live Migration but the VM is not migratable",
        "Eviction policy for VirtualMachine {{ $labels.name }} in namespace {{ $labels.namespace }}"
        " (on node {{ $labels.node }}) is set to Live Migration but the VM is not migratable",
        for_="1m",
    ),
    Alert(
        "KubeVirtVMIExcessiveMigrations",
        "sum by (vmi, namespace) (topk by (vmi, namespace, vmim)"
        " (1, max_over_time(kubevirt_vmi_migration_succeeded[1d]))) >= 12",
        "warning",
        "none",
        "An excessive amount of migrations have been detected on a VirtualMachineInstance"
        " in the last 24 hours.",
        "VirtualMachineInstance {{ $labels.vmi }} in namespace {{ $labels.namespace }}"
        " has been migrated more than 12 times during the last 24 hours",
    ),
    Alert(
        "OutdatedVirtualMachineInstanceWorkloads",
        "kubevirt_vmi_number_of_outdated != 0",
        "warning",
        "none",
        "Some running VMIs are still active in outdated pods"
        " after KubeVirt control plane update has completed.",
        for_="24h",
    ),
    Alert(
        "VirtualMachineInstanceHasEphemeralHotplugVolume",
        "kubevirt_vmi_contains_ephemeral_hotplug_volume == 1",
        "warning",
        "none",
        "Virtual Machine Instance has Ephemeral Hotplug Volume(s)."
        " Ephemeral Hotplugs are deprecated and must be converted to persistent volumes!"
        " In a future release, feature gate `DeclarativeHotplugVolumes` will replace `HotplugVolumes`"
        " and as a result, any remaining ephemeral hotplug volumes will be automatically unplugged",
        "Virtual Machine Instance {{ $labels.name }} in namespace {{ $labels.namespace }}"
        " has ephemeral hotplug volume(s) {{ $labels.volume_name }}.",
    ),
    Alert(
        "GuestVCPUQueueHighWarning",
        "kubevirt_vmi_guest_vcpu_queue > 10",
        "warning",
        "none",
        "Guest vCPU Queue within collection cycle > 10",
        "VirtualMachineInstance {{ $labels.name }} CPU queue length > 10",
    ),
    Alert(
        "GuestVCPUQueueHighCritical",
        "kubevirt_vmi_guest_vcpu_queue > 20",
        "critical",
        "none",
        "Guest vCPU Queue within collection cycle > 20",
        "VirtualMachineInstance {{ $labels.name }} CPU queue length > 20",
    ),
)


def _namespaced_alerts(ns: str) -> list[Alert]:
    """The alerts whose expressions look at the install namespace's Deployments, DaemonSet and pods."""
    handler = f"namespace='{ns}', daemonset='virt-handler'"
    return [
        _low_count(
            "LowVirtAPICount",
            "kubevirt_virt_api_up",
            ns,
            "virt-api",
            "Less than 75% of desired virt-api pods are running.",
            "60m",
        ),
        _rest_errors_burst("VirtApiRESTErrorsBurst", ns, "virt-api"),
        _low_count(
            "LowVirtControllersCount",
            "kubevirt_virt_controller_up",
            ns,
            "virt-controller",
            "Less than 75% of desired virt-controller pods are ready.",
            "10m",
        ),
        _rest_errors_burst("VirtControllerRESTErrorsBurst", ns, "virt-controller"),
        Alert(
            "VirtHandlerDaemonSetRolloutFailing",
            f"(kube_daemonset_status_number_ready{{{handler}}}"
            f" - kube_daemonset_status_desired_number_scheduled{{{handler}}}) != 0",
            "warning",
            "warning",
            "Some virt-handlers failed to roll out",
            for_="15m",
        ),
        _rest_errors_burst("VirtHandlerRESTErrorsBurst", ns, "virt-handler"),
        _low_count(
            "LowVirtOperatorCount",
            "kubevirt_virt_operator_up",
            ns,
            "virt-operator",
            "Less than 75% of desired virt-operator pods are running.",
            "60m",
        ),
        _rest_errors_burst("VirtOperatorRESTErrorsBurst", ns, "virt-operator"),
    ]


def alerts(namespace: str) -> list[Alert]:
    """Every alert, in the order the PrometheusRule lists them (by name, then expression)."""
    unique = {f"{a.name}:{a.expr}": a for a in [*_NAMESPACE_FREE_ALERTS, *_namespaced_alerts(namespace)]}
    return [unique[key] for key in sorted(unique)]


def runbook_url_template(environ: Mapping[str, str]) -> str:
    """The runbook URL template virt-operator uses: ``RUNBOOK_URL_TEMPLATE`` if set, else KubeVirt's.
    It must hold the alert name's ``%s`` exactly once."""
    template = environ.get(RUNBOOK_URL_TEMPLATE_ENV, DEFAULT_RUNBOOK_URL_TEMPLATE)
    if template.count("%s") != 1:
        raise ValueError("runbook URL template must have exactly 1 %s substring")
    return template


# --- objects -----------------------------------------------------------------------------------------


def _recording_rule_json(rule: RecordingRule) -> JSON:
    entry: JSON = {"record": rule.name, "expr": rule.expr}
    if rule.labels:
        entry["labels"] = dict(rule.labels)
    return entry


def _alert_json(alert: Alert, template: str) -> JSON:
    entry: JSON = {"alert": alert.name, "expr": alert.expr}
    if alert.for_:
        entry["for"] = alert.for_
    entry["labels"] = {
        _SEVERITY_LABEL: alert.severity,
        _HEALTH_IMPACT_LABEL: alert.health_impact,
        _PART_OF_LABEL: "kubevirt",
        _COMPONENT_LABEL: "kubevirt",
    }
    annotations = {"summary": alert.summary, "runbook_url": template.replace("%s", alert.name)}
    if alert.description:
        annotations["description"] = alert.description
    entry["annotations"] = annotations
    return entry


def prometheus_rule(namespace: str, runbook_template: str = DEFAULT_RUNBOOK_URL_TEMPLATE) -> JSON:
    """The ``prometheus-kubevirt-rules`` PrometheusRule for an install in ``namespace``."""
    template = runbook_url_template({RUNBOOK_URL_TEMPLATE_ENV: runbook_template})
    return {
        "apiVersion": MONITORING_API_VERSION,
        "kind": "PrometheusRule",
        "metadata": {
            "name": PROMETHEUS_RULE_NAME,
            "namespace": namespace,
            "labels": {PROMETHEUS_LABEL: "true", **_K8S_APP},
        },
        "spec": {
            "groups": [
                {
                    "name": RECORDING_RULES_GROUP,
                    "rules": [_recording_rule_json(rule) for rule in recording_rules(namespace)],
                },
                {
                    "name": ALERTS_GROUP,
                    "rules": [_alert_json(alert, template) for alert in alerts(namespace)],
                },
            ]
        },
    }


def service_monitor(namespace: str, monitor_namespace: str, insecure_skip_verify: bool = True) -> JSON:
    """The ServiceMonitor, created in ``monitor_namespace``, scraping the metrics Service of ``namespace``
    over HTTPS (the components serve self-signed certificates, hence no verification)."""
    # KubeVirt's Go types serialize the empty CA and client-cert references as {}; kept for a like diff.
    tls: JSON = {"ca": {}, "cert": {}}
    if insecure_skip_verify:
        tls["insecureSkipVerify"] = True
    return {
        "apiVersion": MONITORING_API_VERSION,
        "kind": "ServiceMonitor",
        "metadata": {
            "name": SERVICE_MONITOR_NAME,
            "namespace": monitor_namespace,
            "labels": {"openshift.io/cluster-monitoring": "", PROMETHEUS_LABEL: "true", **_K8S_APP},
        },
        "spec": {
            "selector": {"matchLabels": {PROMETHEUS_LABEL: "true"}},
            "namespaceSelector": {"matchNames": [namespace]},
            "endpoints": [
                {"port": METRICS_PORT_NAME, "scheme": "https", "tlsConfig": tls, "honorLabels": True}
            ],
        },
    }


def monitoring_rbac(
    namespace: str, monitor_namespace: str, monitor_account: str = DEFAULT_MONITOR_ACCOUNT
) -> list[JSON]:
    """The Role letting Prometheus discover services, endpoints and pods of the install namespace, bound
    to its service account in ``monitor_namespace``."""
    return [
        {
            "apiVersion": RBAC_API_VERSION,
            "kind": "Role",
            "metadata": metadata(MONITOR_RBAC_NAME, namespace),
            "rules": [
                {
                    "apiGroups": [""],
                    "resources": ["services", "endpoints", "pods"],
                    "verbs": ["get", "list", "watch"],
                }
            ],
        },
        {
            "apiVersion": RBAC_API_VERSION,
            "kind": "RoleBinding",
            "metadata": metadata(MONITOR_RBAC_NAME, namespace),
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": MONITOR_RBAC_NAME},
            "subjects": [{"kind": "ServiceAccount", "namespace": monitor_namespace, "name": monitor_account}],
        },
    ]


def monitoring_objects(
    namespace: str,
    monitor_namespace: str,
    service_monitor_namespace: str = "",
    monitor_account: str = DEFAULT_MONITOR_ACCOUNT,
    runbook_template: str = DEFAULT_RUNBOOK_URL_TEMPLATE,
) -> list[JSON]:
    """What the install strategy adds once ``monitor_namespace`` (holding ``monitor_account``) is known:
    the RBAC, the ServiceMonitor (in ``service_monitor_namespace`` when given) and the PrometheusRule. The
    ``kubevirt-prometheus-metrics`` Service is installed with the other Services regardless."""
    return [
        *monitoring_rbac(namespace, monitor_namespace, monitor_account),
        service_monitor(namespace, service_monitor_namespace or monitor_namespace),
        prometheus_rule(namespace, runbook_template),
    ]
