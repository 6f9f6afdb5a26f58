"""virt-operator installs KubeVirt's monitoring objects where Prometheus runs: the monitor namespace is the
first of the CR's (or the default) namespaces holding Prometheus' service account, the ServiceMonitor and
its RBAC need the servicemonitors API and the PrometheusRule the prometheusrules API; what is no longer
wanted goes."""

from __future__ import annotations

from typing import Any

import pytest

from kubevirt.client import KUBEVIRTS, Resource
from kubevirt.client.resources import (
    CUSTOM_RESOURCE_DEFINITIONS,
    NAMESPACES,
    PROMETHEUS_RULES,
    ROLE_BINDINGS,
    ROLES,
    SERVICE_ACCOUNTS,
    SERVICE_MONITORS,
)
from kubevirt.controller import Store
from kubevirt.virt_operator.apply import contains
from kubevirt.virt_operator.kubevirt import LOOKUP_RECHECK_SECONDS, KubeVirtReconciler, OperatorSettings
from kubevirt.virt_operator.monitoring_install import (
    PROMETHEUS_RULES_CRD,
    SERVICE_MONITORS_CRD,
    LookupPendingError,
    crd_name,
    served,
)
from kubevirt.virt_operator.resource import monitoring
from kubevirt.virt_operator.resource.config import install_config
from kubevirt.virt_operator.resource.metadata import MANAGED_SELECTOR, is_managed
from kubevirt.virt_operator.resource.operator_rbac import operator_rbac
from kubevirt.virt_operator.resources import BY_KIND, MANAGED, MONITORING
from kubevirt_api.core.v1.kubevirt import KubeVirt

from .test_kubevirt_reconciler import NOW, NS, Harness
from .test_operator_healthz import _operator, _VersionServer
from .test_operator_rbac import _holds, _missing

JSON = dict[str, Any]
RBAC = "kubevirt-monitoring"
RULE = "prometheus-kubevirt-rules"


class MonitoringHarness(Harness):
    """The reconciler harness, reading CRDs, Namespaces and ServiceAccounts from the fake API as the
    operator's by-name caches would, and the monitoring objects only while their API is served (as the
    operator's caches do)."""

    def __init__(self, environ: dict[str, str] | None = None) -> None:
        super().__init__()
        self.pending = False
        settings = OperatorSettings(namespace=NS, operator_image="reg.test/kv/virt-operator:v1")
        self.reconciler = KubeVirtReconciler(
            self.api,
            settings,
            self.kubevirts,
            self.cache,
            clock=lambda: NOW,
            crd_named=self.crd_named,
            named=self.named,
            environ=environ or {},
        )

    def cache(self, resource: Resource) -> Store[JSON]:
        if resource in MONITORING and not served(self.crd_named(crd_name(resource))):
            return Store()
        return super().cache(resource)

    def crd_named(self, name: str) -> JSON | None:
        found = [c for c in self.api.objects_of(CUSTOM_RESOURCE_DEFINITIONS) if c["metadata"]["name"] == name]
        return found[0] if found else None

    def named(self, resource: Resource, namespace: str | None, name: str) -> JSON | None:
        if self.pending:
            raise LookupPendingError(name)
        for obj in self.api.objects_of(resource):
            if (obj["metadata"].get("namespace"), obj["metadata"]["name"]) == (namespace, name):
                return obj
        return None

    # The cluster.

    def add_crd(self, name: str) -> None:
        self.api.add(CUSTOM_RESOURCE_DEFINITIONS, {"metadata": {"name": name}})

    def add_prometheus(self, namespace: str = "monitoring", account: str = "prometheus-k8s") -> None:
        if self.named(NAMESPACES, None, namespace) is None:
            self.api.add(NAMESPACES, {"metadata": {"name": namespace}})
        self.api.add(SERVICE_ACCOUNTS, {"metadata": {"name": account, "namespace": namespace}})

    def set_spec(self, **spec: Any) -> None:
        self.api.objects[(KUBEVIRTS.plural, NS, "kubevirt")]["spec"] = spec

    # What was installed.

    def monitoring(self) -> dict[tuple[str, str, str], JSON]:
        """The monitoring objects by (kind, namespace, name)."""
        return {
            (obj["kind"], obj["metadata"]["namespace"], obj["metadata"]["name"]): obj
            for resource in (*MONITORING, ROLES, ROLE_BINDINGS)
            for obj in self.api.objects_of(resource)
            if obj["metadata"]["name"] in (RBAC, RULE)
        }


@pytest.fixture
def harness() -> MonitoringHarness:
    return MonitoringHarness()


def _both_apis(harness: MonitoringHarness) -> MonitoringHarness:
    harness.add_crd(SERVICE_MONITORS_CRD)
    harness.add_crd(PROMETHEUS_RULES_CRD)
    return harness


def _everything(monitor: str = "monitoring", service_monitor: str | None = None) -> set[tuple[str, str, str]]:
    return {
        ("Role", NS, RBAC),
        ("RoleBinding", NS, RBAC),
        ("ServiceMonitor", service_monitor or monitor, RULE),
        ("PrometheusRule", NS, RULE),
    }


def test_without_prometheus_nothing_monitoring_related_is_installed(harness: MonitoringHarness) -> None:
    _both_apis(harness)
    harness.add_kubevirt()
    harness.sync()
    assert harness.monitoring() == {}
    # A monitoring namespace without the account is no monitor namespace either.
    harness.api.add(NAMESPACES, {"metadata": {"name": "monitoring"}})
    harness.api.add(SERVICE_ACCOUNTS, {"metadata": {"name": "other", "namespace": "monitoring"}})
    harness.sync()
    assert harness.monitoring() == {}
    assert harness.kubevirt()["status"]["phase"] == "Deploying"  # the rest is installed regardless


def test_the_account_outside_any_existing_namespace_is_not_enough(harness: MonitoringHarness) -> None:
    _both_apis(harness)
    harness.api.add(SERVICE_ACCOUNTS, {"metadata": {"name": "prometheus-k8s", "namespace": "monitoring"}})
    harness.add_kubevirt()
    harness.sync()
    assert harness.monitoring() == {}


def test_with_both_apis_the_rbac_service_monitor_and_rule_are_kubevirts(harness: MonitoringHarness) -> None:
    _both_apis(harness).add_prometheus()
    harness.add_kubevirt()
    harness.sync()
    installed = harness.monitoring()
    assert set(installed) == _everything()
    expected = {
        (obj["kind"], obj["metadata"]["namespace"], obj["metadata"]["name"]): obj
        for obj in monitoring.monitoring_objects(NS, "monitoring")
    }
    for key, obj in installed.items():
        assert contains(obj, expected[key]), key
        assert is_managed(obj), key
    binding = installed["RoleBinding", NS, RBAC]
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "namespace": "monitoring", "name": "prometheus-k8s"}
    ]
    service_monitor = installed["ServiceMonitor", "monitoring", RULE]
    assert service_monitor["spec"]["namespaceSelector"] == {"matchNames": [NS]}


def test_a_second_sync_writes_no_monitoring_object_again(harness: MonitoringHarness) -> None:
    _both_apis(harness).add_prometheus()
    harness.add_kubevirt()
    harness.sync()
    harness.sync()
    before = len(harness.api.writes)
    harness.sync()
    assert harness.api.writes[before:] == []


def test_only_the_rule_where_only_prometheus_rules_are_served(harness: MonitoringHarness) -> None:
    harness.add_crd(PROMETHEUS_RULES_CRD)
    harness.add_prometheus()
    harness.add_kubevirt()
    harness.sync()
    # KubeVirt writes the scrape RBAC only along with the ServiceMonitor.
    assert set(harness.monitoring()) == {("PrometheusRule", NS, RULE)}


def test_only_the_service_monitor_and_rbac_where_only_service_monitors_are_served(
    harness: MonitoringHarness,
) -> None:
    harness.add_crd(SERVICE_MONITORS_CRD)
    harness.add_prometheus()
    harness.add_kubevirt()
    harness.sync()
    assert set(harness.monitoring()) == _everything() - {("PrometheusRule", NS, RULE)}


def test_a_crd_being_deleted_serves_nothing(harness: MonitoringHarness) -> None:
    _both_apis(harness).add_prometheus()
    crd = harness.api.objects[(CUSTOM_RESOURCE_DEFINITIONS.plural, None, PROMETHEUS_RULES_CRD)]
    crd["metadata"]["deletionTimestamp"] = "2026-06-01T00:00:00Z"
    harness.add_kubevirt()
    harness.sync()
    assert ("PrometheusRule", NS, RULE) not in harness.monitoring()
    assert ("ServiceMonitor", "monitoring", RULE) in harness.monitoring()


def test_the_service_monitor_namespace_is_respected(harness: MonitoringHarness) -> None:
    _both_apis(harness).add_prometheus()
    harness.add_kubevirt()
    harness.set_spec(serviceMonitorNamespace="scrapes")
    harness.sync()
    installed = harness.monitoring()
    assert set(installed) == _everything(service_monitor="scrapes")
    # Prometheus' account is still the one bound.
    assert installed["RoleBinding", NS, RBAC]["subjects"][0]["namespace"] == "monitoring"


def test_the_crs_monitor_namespace_and_account_are_respected(harness: MonitoringHarness) -> None:
    _both_apis(harness).add_prometheus()  # the defaults, which the CR's own settings replace
    harness.add_prometheus("observability", "prom")
    harness.add_kubevirt()
    harness.set_spec(monitorNamespace="observability", monitorAccount="prom")
    harness.sync()
    installed = harness.monitoring()
    assert set(installed) == _everything(monitor="observability")
    assert installed["RoleBinding", NS, RBAC]["subjects"] == [
        {"kind": "ServiceAccount", "namespace": "observability", "name": "prom"}
    ]


def test_the_crs_monitor_namespace_is_the_only_one_looked_at(harness: MonitoringHarness) -> None:
    _both_apis(harness).add_prometheus()
    harness.add_prometheus("observability", "prom")
    harness.add_kubevirt()
    harness.set_spec(monitorNamespace="observability")  # prometheus-k8s is not there
    harness.sync()
    assert harness.monitoring() == {}
    harness.set_spec(monitorAccount="prom")  # nor in the default namespaces
    harness.sync()
    assert harness.monitoring() == {}


def test_the_default_namespaces_are_looked_at_in_order(harness: MonitoringHarness) -> None:
    _both_apis(harness).add_prometheus("monitoring")
    harness.api.add(NAMESPACES, {"metadata": {"name": "openshift-monitoring"}})  # without the account
    harness.add_kubevirt()
    harness.sync()
    assert set(harness.monitoring()) == _everything("monitoring")
    harness.add_prometheus("openshift-monitoring")
    harness.sync()
    # The first one holding the account wins; the ServiceMonitor moves there.
    assert set(harness.monitoring()) == _everything("openshift-monitoring")


def test_monitoring_objects_no_longer_wanted_are_deleted(harness: MonitoringHarness) -> None:
    _both_apis(harness).add_prometheus()
    harness.add_kubevirt()
    harness.sync()
    assert set(harness.monitoring()) == _everything()
    harness.api.delete(SERVICE_ACCOUNTS, "monitoring", "prometheus-k8s")
    harness.sync()
    assert harness.monitoring() == {}


def test_the_scrape_rbac_is_left_alone_while_service_monitors_are_not_served(
    harness: MonitoringHarness,
) -> None:
    _both_apis(harness).add_prometheus()
    harness.add_kubevirt()
    harness.sync()
    # The CRD goes, and the ServiceMonitors with it; KubeVirt neither writes nor deletes the RBAC then.
    harness.api.delete(CUSTOM_RESOURCE_DEFINITIONS, None, SERVICE_MONITORS_CRD)
    harness.api.delete(SERVICE_MONITORS, "monitoring", RULE)
    harness.sync()
    assert set(harness.monitoring()) == _everything() - {("ServiceMonitor", "monitoring", RULE)}


def test_deleting_the_kubevirt_removes_the_monitoring_objects(harness: MonitoringHarness) -> None:
    _both_apis(harness).add_prometheus()
    harness.add_kubevirt()
    harness.sync()
    kv = harness.kubevirt()
    kv["metadata"]["deletionTimestamp"] = "2026-06-01T00:00:00Z"
    harness.api.objects[(KUBEVIRTS.plural, NS, "kubevirt")] = kv
    harness.sync()
    harness.sync()
    assert harness.monitoring() == {}
    # Prometheus' own CRDs are not the operator's.
    assert harness.crd_named(SERVICE_MONITORS_CRD) is not None


def test_the_runbook_url_template_comes_from_the_environment() -> None:
    harness = MonitoringHarness({"RUNBOOK_URL_TEMPLATE": "https://runbooks.test/%s.md"})
    _both_apis(harness).add_prometheus()
    harness.add_kubevirt()
    harness.sync()
    rule = harness.monitoring()["PrometheusRule", NS, RULE]
    alerts = {r["alert"]: r for group in rule["spec"]["groups"] for r in group["rules"] if "alert" in r}
    assert alerts["VirtAPIDown"]["annotations"]["runbook_url"] == "https://runbooks.test/VirtAPIDown.md"


def test_a_bad_runbook_url_template_fails_the_install_and_touches_nothing() -> None:
    harness = MonitoringHarness({"RUNBOOK_URL_TEMPLATE": "https://runbooks.test/"})
    _both_apis(harness).add_prometheus()
    harness.add_kubevirt()
    harness.sync()
    assert [write for write in harness.api.writes if write[1] != KUBEVIRTS.plural] == []
    assert harness.condition("Synchronized")["status"] == "False"
    assert "RUNBOOK_URL_TEMPLATE" in harness.condition("Synchronized")["message"]


def test_a_lookup_not_yet_known_waits_and_touches_nothing(harness: MonitoringHarness) -> None:
    _both_apis(harness).add_prometheus()
    harness.add_kubevirt()
    harness.sync()
    harness.api.delete(SERVICE_ACCOUNTS, "monitoring", "prometheus-k8s")
    harness.pending = True
    before = len(harness.api.writes)
    assert harness.sync() == LOOKUP_RECHECK_SECONDS
    assert harness.api.writes[before:] == []
    assert set(harness.monitoring()) == _everything()


def _kv(spec: JSON) -> KubeVirt:
    return KubeVirt.model_validate(
        {"apiVersion": "kubevirt.io/v1", "kind": "KubeVirt", "metadata": {"name": "kv"}, "spec": spec}
    )


def test_the_crs_monitoring_settings_are_part_of_the_identity_what_was_found_is_not() -> None:
    def identity(spec: JSON) -> str:
        config = install_config(_kv(spec), namespace=NS, operator_image="reg.test/virt-operator:v1")
        return config.deployment_id

    unset = identity({})
    assert identity({"monitorNamespace": ""}) == unset
    settings = ("monitorNamespace", "serviceMonitorNamespace", "monitorAccount")
    others = {identity({key: "x"}) for key in settings}
    assert len(others) == len(settings)
    assert unset not in others
    harness = _both_apis(MonitoringHarness())
    harness.add_prometheus()
    harness.add_kubevirt()
    harness.sync()
    without = harness.kubevirt()["status"]["targetDeploymentID"]
    harness.api.delete(SERVICE_ACCOUNTS, "monitoring", "prometheus-k8s")
    harness.sync()
    assert harness.kubevirt()["status"]["targetDeploymentID"] == without


# The operator process: its caches and its RBAC.


def test_the_operator_watches_monitoring_objects_only_while_their_api_is_served() -> None:
    operator = _operator("https://api.test:6443", _VersionServer())  # never started: no request made
    for resource in MONITORING:
        assert operator.cache(resource).list() == []
        assert operator.synced(resource)  # nothing can be there
    operator._crds[SERVICE_MONITORS_CRD].store.upsert({"metadata": {"name": SERVICE_MONITORS_CRD}})
    assert not operator.synced(SERVICE_MONITORS)  # now a real, cluster-wide cache of the managed ones
    (informer,) = operator._informers(SERVICE_MONITORS)
    assert (informer._namespace, informer._label_selector) == (None, MANAGED_SELECTOR)
    assert operator.synced(PROMETHEUS_RULES)


def test_the_operator_looks_prometheus_up_by_name_in_caches() -> None:
    operator = _operator("https://api.test:6443", _VersionServer())
    # The defaults' caches exist from the start, so they list with the others before the first sync.
    for namespace in monitoring.DEFAULT_MONITOR_NAMESPACES:
        assert (NAMESPACES, None, namespace) in operator._named_informers
        assert (SERVICE_ACCOUNTS, namespace, "prometheus-k8s") in operator._named_informers
    with pytest.raises(LookupPendingError):
        operator.named(SERVICE_ACCOUNTS, "observability", "prom")
    informer = operator._named_informers[(SERVICE_ACCOUNTS, "observability", "prom")]
    assert (informer._namespace, informer._field_selector) == ("observability", "metadata.name=prom")
    with pytest.raises(KeyError):
        operator.named(SERVICE_MONITORS, "monitoring", RULE)


def test_the_applier_knows_the_monitoring_kinds() -> None:
    assert BY_KIND["ServiceMonitor"] is SERVICE_MONITORS
    assert BY_KIND["PrometheusRule"] is PROMETHEUS_RULES
    assert set(MONITORING) <= set(MANAGED)  # removed as stale and on uninstall
    assert SERVICE_MONITORS.api_version == PROMETHEUS_RULES.api_version == monitoring.MONITORING_API_VERSION


@pytest.mark.parametrize("namespace", [NS, "elsewhere"])
def test_the_operator_may_do_all_of_it(namespace: str) -> None:
    objects = {obj["kind"]: obj for obj in operator_rbac(namespace)}
    cluster_wide = objects["ClusterRole"]["rules"]
    in_namespace = [*cluster_wide, *objects["Role"]["rules"]]
    role, _binding, *_ = monitoring.monitoring_objects(namespace, "monitoring")
    # Granting the scrape Role needs every permission it grants, in the install namespace.
    assert _missing(in_namespace, role["rules"]) == []
    for verb in ("get", "list", "watch", "create", "patch", "delete"):
        for plural in ("servicemonitors", "prometheusrules"):
            assert _holds(cluster_wide, ("monitoring.coreos.com", plural, verb, "")), (plural, verb)
        for plural in ("roles", "rolebindings"):
            assert _holds(in_namespace, ("rbac.authorization.k8s.io", plural, verb, "")), (plural, verb)
    for verb in ("get", "list", "watch"):
        for plural in ("namespaces", "serviceaccounts", "customresourcedefinitions"):
            group = "apiextensions.k8s.io" if plural == "customresourcedefinitions" else ""
            assert _holds(cluster_wide, (group, plural, verb, "")), (plural, verb)
