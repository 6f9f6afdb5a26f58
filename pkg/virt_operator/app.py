"""virt-operator's application: informers on the KubeVirt CRs and on everything the operator installed
(in its namespace and the DataVolume importer's), plus CDI's and the Prometheus operator's CRDs by name
whoever made them, and Prometheus' namespace and service account by name; one reconciler behind a work
queue, run by the leader of the ``virt-operator`` Lease.

Every event on an installed object (a deletion, an edit, a workload's status) enqueues the KubeVirt CRs,
so drift is repaired and readiness reported without polling. The probe port serves ``/metrics`` and
``/healthz`` with a certificate the operator makes for itself at start.
"""

from __future__ import annotations

import datetime
import signal
import socket
import tempfile
import threading
import uuid
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

from kubevirt.client import JSON, KUBEVIRTS, KubeClient, KubeConfigError, Resource
from kubevirt.client.connection import connect
from kubevirt.client.resources import CDIS, CUSTOM_RESOURCE_DEFINITIONS, NAMESPACES, SERVICE_ACCOUNTS
from kubevirt.controller import (
    Controller,
    Informer,
    LeaderElector,
    RateLimitingQueue,
    SharedInformerFactory,
    key_for,
    key_of,
)
from kubevirt.log import get_logger
from kubevirt.monitoring import virt_operator as operator_metrics
from kubevirt.service.health import ApiServerHealth
from kubevirt.service.probes import ProbeServer
from kubevirt.virt_config.follower import ConfigFollower
from kubevirt.virt_config.tls import TLSConfiguration
from kubevirt.virt_operator.apply import Cache, CacheUnion
from kubevirt.virt_operator.certificates import new_ca
from kubevirt.virt_operator.kubevirt import KubeVirtReconciler, OperatorSettings
from kubevirt.virt_operator.monitoring_install import MONITORING_CRDS, LookupPendingError, crd_name, served
from kubevirt.virt_operator.resource import cdi
from kubevirt.virt_operator.resource.metadata import MANAGED_SELECTOR, is_managed
from kubevirt.virt_operator.resource.monitoring import DEFAULT_MONITOR_ACCOUNT, DEFAULT_MONITOR_NAMESPACES
from kubevirt.virt_operator.resource.strategy import crds
from kubevirt.virt_operator.resources import (
    COMMON_INSTANCETYPES,
    IN_CDI_NAMESPACE,
    MANAGED,
    MONITORING,
    NAMED_IN_CDI_NAMESPACE,
)
from kubevirt_api.cdi.constants import CDI_NAMESPACE
from kubevirt_api.core.v1.kubevirt import KubeVirt

COMPONENT = "virt-operator"
LEASE_NAME = "virt-operator"
EXIT_CANNOT_START = 2
EXIT_LOST_LEADERSHIP = 1
SYNC_TIMEOUT = 60.0
# About 50 watches (the monitoring CRDs, Prometheus' namespaces and accounts, and ServiceMonitors and
# PrometheusRules among them) and room for the writes.
POOL_SIZE = 58


@dataclass(frozen=True)
class Options:
    namespace: str
    operator_image: str
    kubeconfig: str | None = None
    listen: str = "0.0.0.0"
    port: int = 8443
    workers: int = 1
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0


class VirtOperator:
    """The informers, the queue and the reconciler; runs them while leading."""

    def __init__(self, api: KubeClient, options: Options) -> None:
        self._api = api
        self._options = options
        self._log = get_logger()
        self._factory = SharedInformerFactory(api)
        self.queue = RateLimitingQueue(name="virt-operator")  # KubeVirt's queue name, as its metrics show it
        self._kubevirts: Informer[KubeVirt] = self._factory.informer(KUBEVIRTS, KubeVirt)
        self._kubevirts.add_event_handler(
            on_add=lambda _obj: self._enqueue_all(),
            on_update=lambda _old, _new: self._enqueue_all(),
            on_delete=lambda _obj: self._enqueue_all(),
        )
        # Namespaced kinds are watched in the install namespace, some also in the DataVolume importer's.
        self._managed: dict[Resource, list[Informer[JSON]]] = {}
        for resource in MANAGED:
            if resource in MONITORING:
                continue  # watched once their CRDs exist (see _informers)
            namespaces: list[str | None] = [None]
            if resource.namespaced:
                namespaces = [options.namespace]
                if resource in IN_CDI_NAMESPACE and options.namespace != CDI_NAMESPACE:
                    namespaces.append(CDI_NAMESPACE)
            self._managed[resource] = [
                self._watch(resource, namespace=ns, label_selector=MANAGED_SELECTOR) for ns in namespaces
            ]
            # One informer per name where the operator may read only those objects (list and watch by
            # name are authorized by the rule's resourceNames).
            for name in NAMED_IN_CDI_NAMESPACE.get(resource, ()):
                if options.namespace == CDI_NAMESPACE:
                    break  # seen by the install namespace's informer
                self._managed[resource].append(
                    self._watch(
                        resource,
                        namespace=CDI_NAMESPACE,
                        label_selector=MANAGED_SELECTOR,
                        field_selector=f"metadata.name={name}",
                    )
                )
        # CRDs others install, each by its name: one of CDI's not the operator's means CDI is there, the
        # Prometheus operator's say which monitoring objects the cluster takes.
        self._crds = {
            name: self._watch(CUSTOM_RESOURCE_DEFINITIONS, field_selector=f"metadata.name={name}")
            for name in (*cdi.crd_names(), *MONITORING_CRDS)
        }
        # Namespaces and ServiceAccounts by name, where Prometheus' account is looked for: the defaults'
        # from the start, a CR's own on first use.
        self._named_informers: dict[tuple[Resource, str | None, str], Informer[JSON]] = {}
        self._named_lock = threading.Lock()
        for namespace in DEFAULT_MONITOR_NAMESPACES:
            self._named_informer(NAMESPACES, None, namespace)
            self._named_informer(SERVICE_ACCOUNTS, namespace, DEFAULT_MONITOR_ACCOUNT)
        # Made on first use: their CRDs exist only once the operator installed them.
        self._lazy: dict[Resource, Informer[JSON]] = {}
        self._lazy_lock = threading.Lock()
        self.reconciler = KubeVirtReconciler(
            api,
            OperatorSettings(namespace=options.namespace, operator_image=options.operator_image),
            self._kubevirts.store,
            self.cache,
            synced=self.synced,
            crd_named=self._crd_named,
            named=self.named,
        )
        self.controller = Controller("kubevirt", self.queue, self.reconciler, workers=options.workers)
        # The answer virt-api, virt-controller and virt-handler give: 500 while the API server's /version
        # cannot be read.
        self._health = ApiServerHealth(api.server_version, self._config_resource_version)
        # The CR's configuration (its tlsConfiguration, for the probe port) is followed by every replica,
        # leading or not, as in KubeVirt: its own informer, started at once rather than on leading.
        self._config_factory = SharedInformerFactory(api)
        self._config = ConfigFollower.from_informer(self._config_factory, options.namespace)
        self._config.on_change(self._update_configuration_metrics)
        self.stop_event = threading.Event()
        self.leading = threading.Event()
        self._lost = threading.Event()
        self._elector = LeaderElector(
            api,
            namespace=options.namespace,
            name=LEASE_NAME,
            identity=f"{socket.gethostname()}_{uuid.uuid4()}",  # as client-go names candidates
            on_started_leading=self._start_leading,
            on_stopped_leading=self._stop_leading,
            lease_duration=options.lease_duration,
            renew_deadline=options.renew_deadline,
            retry_period=options.retry_period,
        )

    def _update_configuration_metrics(self) -> None:
        operator_metrics.set_emulation(self._config.current().launcher.use_emulation)

    def tls_config(self) -> TLSConfiguration:
        """The cluster's ``tlsConfiguration``, which the probe port follows."""
        return self._config.current().tls

    def _watch(
        self,
        resource: Resource,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> Informer[JSON]:
        """An informer whose every change (but a resync's) brings the CRs to a sync."""
        informer = self._factory.informer(
            resource, namespace=namespace, label_selector=label_selector, field_selector=field_selector
        )
        informer.add_event_handler(
            on_add=lambda _obj: self._enqueue_all(),
            on_update=self._on_managed_update,
            on_delete=lambda _obj: self._enqueue_all(),
        )
        return informer

    def cache(self, resource: Resource) -> Cache:
        informers = self._informers(resource)
        if len(informers) == 1:
            return informers[0].store
        return CacheUnion([informer.store for informer in informers])

    def synced(self, resource: Resource) -> bool:
        return all(informer.has_synced() for informer in self._informers(resource))

    def _crd_named(self, name: str) -> JSON | None:
        return self._crds[name].store.get_by_key(name)

    def named(self, resource: Resource, namespace: str | None, name: str) -> JSON | None:
        """The Namespace or ServiceAccount of that name from its own cache; LookupPendingError while that
        cache has not listed (the first lookup of a name makes it)."""
        informer = self._named_informer(resource, namespace, name)
        if not informer.has_synced():
            raise LookupPendingError(f"{resource.plural} {key_for(namespace, name)}")
        return informer.store.get_by_key(key_for(namespace, name))

    def _named_informer(self, resource: Resource, namespace: str | None, name: str) -> Informer[JSON]:
        if resource not in (NAMESPACES, SERVICE_ACCOUNTS):
            raise KeyError(f"virt-operator does not look up {resource.plural} by name")
        with self._named_lock:
            informer = self._named_informers.get((resource, namespace, name))
            if informer is None:
                informer = self._watch(resource, namespace=namespace, field_selector=f"metadata.name={name}")
                self._named_informers[(resource, namespace, name)] = informer
            return informer

    def _informers(self, resource: Resource) -> list[Informer[JSON]]:
        managed = self._managed.get(resource)
        if managed is not None:
            return managed
        if resource in MONITORING and not served(self._crd_named(crd_name(resource))):
            return []  # nothing can exist while the API is not served: an empty cache
        with self._lazy_lock:
            informer = self._lazy.get(resource)
            if informer is None:
                informer = self._lazy_informer(resource)
                self._lazy[resource] = informer
            return [informer]

    def _lazy_informer(self, resource: Resource) -> Informer[JSON]:
        """Every object, managed or not: one of the bundle's names taken by a user's object is made the
        bundle's again, as KubeVirt does; any CDI object at all means none is to be made. The managed
        ServiceMonitors and PrometheusRules cluster-wide (KubeVirt's informers), once their API is served."""
        if resource in MONITORING:
            return self._watch(resource, label_selector=MANAGED_SELECTOR)
        if resource not in (*COMMON_INSTANCETYPES, CDIS):
            raise KeyError(f"virt-operator does not watch {resource.plural}")
        informer = self._factory.informer(resource)
        if resource == CDIS:
            informer.add_event_handler(
                on_add=lambda _obj: self._enqueue_all(), on_delete=lambda _obj: self._enqueue_all()
            )
        else:
            informer.add_event_handler(
                on_add=self._on_bundle_event,
                on_update=self._on_bundle_update,
                on_delete=self._on_bundle_event,
            )
        return informer

    def _on_bundle_event(self, obj: JSON) -> None:
        # Users' own cluster instance types are none of the operator's business.
        if is_managed(obj):
            self._enqueue_all()

    def _on_bundle_update(self, old: JSON, new: JSON) -> None:
        if is_managed(old) or is_managed(new):
            self._on_managed_update(old, new)

    def _on_managed_update(self, old: JSON, new: JSON) -> None:
        # Resyncs deliver unchanged objects; only real changes need a sync.
        if old.get("metadata", {}).get("resourceVersion") != new.get("metadata", {}).get("resourceVersion"):
            self._enqueue_all()

    def _enqueue_all(self) -> None:
        for kv in self._kubevirts.store.list():
            self.queue.add(key_of(kv))

    def _start_leading(self) -> None:
        self._log.info("became the leader", lease=f"{self._options.namespace}/{LEASE_NAME}")
        operator_metrics.register_leader_metrics()
        operator_metrics.set_leading(True)
        self._factory.start()
        if not self._factory.wait_for_cache_sync(SYNC_TIMEOUT):
            self._log.error("the caches did not sync, giving up the lease")
            self._lost.set()
            self.stop_event.set()
            return
        self.leading.set()
        self._enqueue_all()
        threading.Thread(
            target=self.controller.run, args=(self.stop_event,), name="kubevirt", daemon=True
        ).start()

    def _stop_leading(self) -> None:
        if not self.stop_event.is_set():
            self._log.error("lost the leader lease")
            self._lost.set()
        operator_metrics.set_leading(False)
        self.leading.clear()
        self.stop_event.set()

    def stop(self) -> None:
        self.stop_event.set()

    def run(self) -> int:
        # The CRDs' structural schemas take a moment to build: done before a CR asks for them.
        threading.Thread(target=crds, name="warm-strategy", daemon=True).start()
        self._config_factory.start()
        elector = threading.Thread(
            target=self._elector.run, args=(self.stop_event,), name="leader-election", daemon=True
        )
        operator_metrics.set_ready(True)
        elector.start()
        self.stop_event.wait()
        self._factory.stop()
        self._config_factory.stop()
        elector.join(timeout=self._options.renew_deadline)
        return EXIT_LOST_LEADERSHIP if self._lost.is_set() else 0

    def _config_resource_version(self) -> str:
        """The resourceVersion of the KubeVirt CR in charge ("" before one, or while not leading: the
        caches run only on the leader)."""
        active = self.reconciler.active_install()
        metadata = active.metadata if active is not None else None
        return (metadata.resource_version or "") if metadata is not None else ""

    def probes(self) -> dict[str, Any]:
        return {
            "/healthz": self._health,
            "/leader": lambda: (200, {"apiserver": {"leader": str(self.leading.is_set()).lower()}}),
        }


def _probe_certificate(directory: Path) -> tuple[Path, Path]:
    """A self-signed certificate for the probe port (kubelets do not verify probe certificates)."""
    pair = new_ca(COMPONENT, datetime.datetime.now(datetime.UTC), datetime.timedelta(days=365))
    cert, key = directory / "tls.crt", directory / "tls.key"
    cert.write_bytes(pair.cert_pem)
    key.write_bytes(pair.key_pem)
    key.chmod(0o600)
    return cert, key


def run(options: Options) -> int:
    """Run until SIGTERM or SIGINT (0), or until the leader lease is lost (1)."""
    log = get_logger()
    try:
        # One connection per watch (a watch holds it) plus room for the writes.
        api = KubeClient(connect(options.kubeconfig, pool_size=POOL_SIZE), user_agent=COMPONENT)
    except KubeConfigError as err:
        log.error("virt-operator cannot reach the cluster", reason=str(err))
        return EXIT_CANNOT_START
    operator_metrics.register()
    operator = VirtOperator(api, options)
    with tempfile.TemporaryDirectory(prefix="virt-operator-") as directory:
        cert, key = _probe_certificate(Path(directory))
        try:
            probes = ProbeServer(
                options.listen,
                options.port,
                cert_file=cert,
                key_file=key,
                probes=operator.probes(),
                tls_config=operator.tls_config,
            )
        except OSError as err:
            log.error("virt-operator cannot serve", reason=str(err))
            return EXIT_CANNOT_START

        def on_signal(signum: int, _frame: FrameType | None) -> None:
            log.info("stopping", signal=signal.Signals(signum).name)
            operator.stop()

        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, on_signal)
        probes.start()
        log.info(
            "virt-operator serving",
            port=probes.port,
            namespace=options.namespace,
            image=options.operator_image,
        )
        try:
            return operator.run()
        finally:
            probes.stop()
