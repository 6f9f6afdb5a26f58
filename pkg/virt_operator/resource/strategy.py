"""The install strategy: every object virt-operator installs for one :class:`InstallConfig`, in the order
KubeVirt's reconciler creates them (CRDs, RBAC, Services, then the webhooks, APIServices and workloads
that need the certificates).

A pure function of the config and the CA bundle. KubeVirt runs a Job with the target operator image to
dump its strategy into a ConfigMap, so one operator can install another version's objects; this project
generates the strategy in-process from the operator's own code (see the README for the trade-off).
"""

from __future__ import annotations

import copy
import functools

from kubevirt.apiservices import subresource_api_services
from kubevirt.virt_operator.resource import cdi, cluster_roles, monitoring, rbac, services, webhooks
from kubevirt.virt_operator.resource.config import InstallConfig
from kubevirt.virt_operator.resource.customize import customize, customizer_hash
from kubevirt.virt_operator.resource.daemonset import handler_daemonset
from kubevirt.virt_operator.resource.deployments import (
    VIRT_LAUNCHER,
    api_deployment,
    controller_deployment,
    exportproxy_deployment,
    pod_disruption_budget,
)
from kubevirt.virt_operator.resource.metadata import stamp
from kubevirt.virt_operator.resource.placement import inject_placement
from kubevirt_api.crd import CRDS, custom_resource_definition
from kubevirt_api.view import JSON

KUBEVIRT_KIND = "KubeVirt"  # its CRD ships with the operator, not with the strategy
VIRT_HANDLER = "virt-handler"


@functools.cache
def _crds() -> tuple[JSON, ...]:
    # Building the structural schemas is the slow part of a strategy: once per process.
    return tuple(custom_resource_definition(kind) for kind in CRDS if kind != KUBEVIRT_KIND)


def crds() -> list[JSON]:
    return [copy.deepcopy(crd) for crd in _crds()]


def kubevirt_crd() -> JSON:
    return custom_resource_definition(KUBEVIRT_KIND)


def workloads(config: InstallConfig) -> list[JSON]:
    """The Deployments, their PodDisruptionBudgets and the DaemonSet. virt-exportproxy's only while the
    VMExport gate is on: without it, the next sync deletes them as objects the strategy no longer has
    (KubeVirt's reconciler deletes the Deployment), and readiness does not wait for them."""
    deployments = [api_deployment(config), controller_deployment(config)]
    if config.export_proxy:
        deployments.append(exportproxy_deployment(config))
    objects: list[JSON] = []
    for deployment in deployments:
        objects.append(deployment)
        budget = pod_disruption_budget(deployment)
        if budget is not None:
            objects.append(budget)
    daemonset = handler_daemonset(
        config.namespace,
        config.image(VIRT_HANDLER),
        verbosity=config.verbosity_of(VIRT_HANDLER),
        launcher_image=config.image(VIRT_LAUNCHER),
        force_emulation=config.use_emulation,
    )
    pod = daemonset["spec"]["template"]["spec"]
    inject_placement(config.handler_placement, pod)
    for container in [*pod["containers"], *pod.get("initContainers", [])]:
        container["imagePullPolicy"] = config.pull_policy
    objects.append(daemonset)
    return objects


# The monitoring objects written only along with the ServiceMonitor (KubeVirt skips the Role and
# RoleBinding letting Prometheus scrape where ServiceMonitors are not served); the PrometheusRule waits
# for its own API.
_WITH_THE_SERVICE_MONITOR = frozenset({"Role", "RoleBinding", "ServiceMonitor"})


def monitoring_objects(config: InstallConfig) -> list[JSON]:
    """KubeVirt's monitoring objects the cluster can take: none without a monitor namespace, the
    ServiceMonitor and its RBAC only where ServiceMonitors are served, the PrometheusRule only where
    PrometheusRules are."""
    found = config.monitoring
    if found is None:
        return []
    objects = monitoring.monitoring_objects(
        config.namespace,
        found.namespace,
        config.service_monitor_namespace,
        config.monitor_service_account(),
        found.runbook_template,
    )
    served = {"PrometheusRule": found.prometheus_rules}
    served.update(dict.fromkeys(_WITH_THE_SERVICE_MONITOR, found.service_monitors))
    return [obj for obj in objects if served[obj["kind"]]]


def install_strategy(
    config: InstallConfig, ca_bundle: bytes | None = None, cdi_api_ca_bundle: bytes | None = None
) -> list[JSON]:
    """Every object, stamped with the operator's labels and annotations, user patches applied; the
    monitoring objects the config's :class:`Monitoring` allows; the DataVolume importer's too when the
    config says it runs (``cdi_api_ca_bundle`` is the CA bundle of its upload API server)."""
    namespace = config.namespace
    objects: list[JSON] = [
        *crds(),
        *rbac.api_rbac(namespace),
        *rbac.controller_rbac(namespace),
        *rbac.handler_rbac(namespace),
        *rbac.exportproxy_rbac(namespace),
        *cluster_roles.cluster_roles(),
        *services.services(namespace),
        *monitoring_objects(config),
        webhooks.validating_webhook_configuration(namespace, ca_bundle),
        webhooks.mutating_webhook_configuration(namespace, ca_bundle),
        *subresource_api_services(namespace, ca_bundle),
        *workloads(config),
    ]
    if config.data_importer:
        objects += cdi.install_set(config, cdi_api_ca_bundle)
    digest = customizer_hash(config)
    return [customize(stamp(obj, config), config, digest) for obj in objects]
