"""virt-controller's application object: what runs once the flags are parsed.

Every replica serves ``/healthz``, ``/leader`` and ``/metrics`` over TLS and competes for the
``virt-controller`` Lease in its namespace; only the leader starts the informers and the controllers. A
replica that loses the lease exits, as KubeVirt's does, so that it restarts as a clean standby.
"""

from __future__ import annotations

import signal
import socket
import threading
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

from kubevirt.client import EventRecorder, KubeClient, install_namespace
from kubevirt.controller import LeaderElector, SharedInformerFactory
from kubevirt.log import get_logger
from kubevirt.monitoring.registration import register_all, unregister_all
from kubevirt.monitoring.virt_controller.component import ComponentStatus
from kubevirt.service.health import ApiServerHealth
from kubevirt.service.probes import ProbeServer
from kubevirt.service.startup import cluster_client, tls_files_present
from kubevirt.virt_config import ClusterConfig
from kubevirt.virt_config.follower import ConfigFollower
from kubevirt.virt_config.tls import TLSConfiguration
from kubevirt.virt_controller.controllers import ControllerSet, Threads
from kubevirt.virt_controller.services import TemplateParameters
from kubevirt.virt_controller.watch.snapshot.freezer import SubresourceFreezer
from kubevirt.virt_controller.watch.volumerequests import SubresourceVolumes

LEASE_NAME = "virt-controller"
COMPONENT = "virt-controller"
# Exit codes: 0 stopped by a signal, 1 lost the lease or failed while running, 2 cannot start.
EXIT_LOST_LEADERSHIP = 1
EXIT_CANNOT_START = 2
CONFIG_SYNC_TIMEOUT = 120.0


@dataclass(frozen=True, kw_only=True)
class LeaderElection:
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0


@dataclass(frozen=True, kw_only=True)
class Options:
    listen: str = "0.0.0.0"
    port: int = 8182
    tls_cert_file: Path
    tls_key_file: Path
    kubeconfig: str | None = None
    namespace: str | None = None
    template: TemplateParameters = field(default_factory=TemplateParameters)
    threads: Threads = field(default_factory=Threads)
    leader_election: LeaderElection = field(default_factory=LeaderElection)
    config: ClusterConfig = field(default_factory=ClusterConfig)


class VirtController:
    def __init__(self, options: Options, api: KubeClient, namespace: str) -> None:
        self._options = options
        self._api = api
        self._namespace = namespace
        self._log = get_logger()
        self._stop = threading.Event()
        self._lost = threading.Event()
        self._leading = threading.Event()
        self._events = EventRecorder(api, COMPONENT, host=socket.gethostname())
        self._factory = SharedInformerFactory(api)
        # The configuration is followed by every replica, leader or not (as in KubeVirt), so that each
        # one's /healthz reports the KubeVirt CR version it runs with.
        self._config_factory = SharedInformerFactory(api)
        self._config = ConfigFollower.from_informer(self._config_factory, namespace, initial=options.config)
        self._controllers = ControllerSet(
            api=api,
            events=self._events,
            factory=self._factory,
            config=self._config,
            template=options.template,
            threads=options.threads,
            vmi_volumes=SubresourceVolumes(api),
            freezer=SubresourceFreezer(api),
            namespace=namespace,
        )
        self._health = ApiServerHealth(api.server_version, self._config.resource_version)
        self._status = ComponentStatus()
        election = options.leader_election
        self._elector = LeaderElector(
            api,
            namespace=namespace,
            name=LEASE_NAME,
            identity=socket.gethostname(),
            on_started_leading=self._start_leading,
            on_stopped_leading=self._stop_leading,
            lease_duration=election.lease_duration,
            renew_deadline=election.renew_deadline,
            retry_period=election.retry_period,
        )

    def tls_config(self) -> TLSConfiguration:
        """The cluster's ``tlsConfiguration``, which the metrics listener follows."""
        return self._config.current().tls

    def probes(self) -> dict[str, Any]:
        return {
            "/healthz": self._health,
            "/leader": lambda: (200, {"apiserver": {"leader": str(self._leading.is_set()).lower()}}),
        }

    def _start_leading(self) -> None:
        self._log.info("became the leader, starting the controllers", lease=f"{self._namespace}/{LEASE_NAME}")
        # Controllers render launcher pods from the configuration: it must be read first.
        config_synced = self._config_factory.wait_for_cache_sync(CONFIG_SYNC_TIMEOUT)
        if config_synced and self._controllers.start(self._stop):
            self._leading.set()
            self._status.set_leading()
        elif not self._stop.is_set():
            self._log.error("the caches did not sync, giving up the lease")
            self._lost.set()
            self._stop.set()

    def _stop_leading(self) -> None:
        if not self._stop.is_set():
            self._log.error("lost the leader lease")
            self._lost.set()
        self._leading.clear()
        self._stop.set()

    def stop(self) -> None:
        self._stop.set()

    def run(self) -> int:
        self._config_factory.start()
        elector = threading.Thread(
            target=self._elector.run, args=(self._stop,), name="leader-election", daemon=True
        )
        collectors = register_all([self._status, *self._controllers.collectors])
        self._status.set_ready()
        elector.start()
        self._stop.wait()
        self._status.set_ready(False)
        self._controllers.shut_down()
        self._config_factory.stop()
        self._events.stop()
        elector.join(timeout=self._options.leader_election.renew_deadline)
        unregister_all(collectors)
        return EXIT_LOST_LEADERSHIP if self._lost.is_set() else 0


def run(options: Options) -> int:
    """Run until SIGTERM or SIGINT (0), or until the leader lease is lost (1). Returns the exit code."""
    log = get_logger()
    if not tls_files_present(options.tls_cert_file, options.tls_key_file):
        return EXIT_CANNOT_START
    api = cluster_client(options.kubeconfig, COMPONENT)
    if api is None:
        return EXIT_CANNOT_START
    namespace = install_namespace(options.namespace)
    controller = VirtController(options, api, namespace)
    try:
        probes = ProbeServer(
            options.listen,
            options.port,
            cert_file=options.tls_cert_file,
            key_file=options.tls_key_file,
            probes=controller.probes(),
            tls_config=controller.tls_config,
        )
    except OSError as err:
        log.error("virt-controller cannot serve", reason=str(err))
        return EXIT_CANNOT_START

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        log.info("stopping", signal=signal.Signals(signum).name)
        controller.stop()

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, on_signal)
    probes.start()
    log.info("virt-controller serving", address=options.listen, port=probes.port, namespace=namespace)
    try:
        return controller.run()
    finally:
        probes.stop()
