"""The cluster-dependent part of installing KubeVirt's monitoring objects: where Prometheus is.

The monitor namespace is the first of the CR's ``spec.monitorNamespace`` (else openshift-monitoring, then
monitoring) that exists and holds Prometheus' service account (``spec.monitorAccount``, else
prometheus-k8s); without one nothing monitoring-related is installed. The ServiceMonitor (with the RBAC
letting Prometheus scrape) needs the servicemonitors API, the PrometheusRule the prometheusrules API,
each served while its CRD exists and is not being deleted.

Unlike KubeVirt, which decides this when it generates an install strategy (and restarts when a
monitoring CRD comes or goes), the reconciler resolves it on every sync from its caches, so Prometheus
arriving or leaving is followed at once; what is no longer wanted is deleted as stale, as KubeVirt's
reconciler deletes ServiceMonitors, PrometheusRules and Roles its strategy lacks.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping

from kubevirt.client import JSON, Resource
from kubevirt.client.resources import NAMESPACES, PROMETHEUS_RULES, SERVICE_ACCOUNTS, SERVICE_MONITORS
from kubevirt.log import get_logger
from kubevirt.virt_operator.data_importer import CrdLookup
from kubevirt.virt_operator.resource.config import InstallConfig, InvalidInstallConfigError, Monitoring
from kubevirt.virt_operator.resource.monitoring import (
    MONITOR_RBAC_NAME,
    RUNBOOK_URL_TEMPLATE_ENV,
    runbook_url_template,
)

_log = get_logger()
# (resource, namespace or None, name) → the object, or None when there is none.
ObjectLookup = Callable[[Resource, str | None, str], JSON | None]


class LookupPendingError(Exception):
    """The cache a lookup reads has not listed yet: the answer is not known (a sync waits for it rather
    than take absence for an answer and delete what is installed)."""


def nothing_named(_resource: Resource, _namespace: str | None, _name: str) -> JSON | None:
    return None


def crd_name(resource: Resource) -> str:
    return f"{resource.plural}.{resource.group}"


SERVICE_MONITORS_CRD = crd_name(SERVICE_MONITORS)
PROMETHEUS_RULES_CRD = crd_name(PROMETHEUS_RULES)
MONITORING_CRDS: tuple[str, ...] = (SERVICE_MONITORS_CRD, PROMETHEUS_RULES_CRD)


def served(crd: JSON | None) -> bool:
    """Whether a CRD serves its API: it exists and is not being deleted (KubeVirt's check)."""
    return crd is not None and not (crd.get("metadata") or {}).get("deletionTimestamp")


def withheld(config: InstallConfig, obj: JSON) -> bool:
    """The monitoring Role and RoleBinding KubeVirt's strategy holds but does not write while
    ServiceMonitors are not served: it leaves one already there alone, so they are not stale."""
    found = config.monitoring
    metadata = obj.get("metadata") or {}
    return (
        found is not None
        and not found.service_monitors
        and obj.get("kind") in ("Role", "RoleBinding")
        and metadata.get("name") == MONITOR_RBAC_NAME
        and metadata.get("namespace") == config.namespace
    )


class MonitoringResolver:
    """``crd_named`` reads a CRD by name whoever made it; ``named`` reads a Namespace or ServiceAccount
    from a cache (raising :class:`LookupPendingError` while it has not listed); ``environ`` is the operator's
    environment, which may hold the runbook URL template."""

    def __init__(self, crd_named: CrdLookup, named: ObjectLookup, environ: Mapping[str, str]) -> None:
        self._crd_named = crd_named
        self._named = named
        self._environ = environ
        self._reported: str | None = None  # the last monitor namespace logged ("" for none)

    def monitor_namespace(self, config: InstallConfig) -> str:
        """The first candidate namespace that exists and holds the monitor account; "" when none does."""
        account = config.monitor_service_account()
        for namespace in config.monitor_namespaces():
            if self._named(NAMESPACES, None, namespace) is None:
                continue
            if self._named(SERVICE_ACCOUNTS, namespace, account) is not None:
                return namespace
        return ""

    def resolve(self, config: InstallConfig) -> InstallConfig:
        """``config`` with what the cluster allows of monitoring (None when there is no monitor
        namespace); a bad runbook URL template is an invalid configuration."""
        namespace = self.monitor_namespace(config)
        self._report(config, namespace)
        if not namespace:
            return dataclasses.replace(config, monitoring=None)
        try:
            template = runbook_url_template(self._environ)
        except ValueError as err:
            raise InvalidInstallConfigError(f"{RUNBOOK_URL_TEMPLATE_ENV}: {err}") from err
        found = Monitoring(
            namespace=namespace,
            service_monitors=served(self._crd_named(SERVICE_MONITORS_CRD)),
            prometheus_rules=served(self._crd_named(PROMETHEUS_RULES_CRD)),
            runbook_template=template,
        )
        return dataclasses.replace(config, monitoring=found)

    def _report(self, config: InstallConfig, namespace: str) -> None:
        """Says once per change where Prometheus was found, or that it was not (KubeVirt's warning)."""
        if namespace == self._reported:
            return
        self._reported = namespace
        account = config.monitor_service_account()
        if namespace:
            _log.info("found the monitoring service account", namespace=namespace, account=account)
        else:
            _log.warning(
                "no ServiceMonitor resources: the monitoring service account is in none of the "
                "monitoring namespaces",
                account=account,
                namespaces=list(config.monitor_namespaces()),
            )
