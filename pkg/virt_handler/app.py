"""virt-handler's application object: what runs once the flags are parsed.

One process per node: the heartbeat keeps the node labelled schedulable, the node labeller labels it with
what its libvirt can run, the device plugins advertise the host devices launcher pods request, the VM
controller drives every VMI labelled with this node's name through its virt-launcher, and the console
server (mutual TLS) answers virt-api's console, VNC and lifecycle calls for those VMIs.
"""

from __future__ import annotations

import signal
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

import grpc
from prometheus_client.registry import Collector

from kubevirt import pod_paths
from kubevirt.client import (
    VIRTUAL_MACHINE_INSTANCES,
    EventRecorder,
    KubeClient,
    KubeConfigError,
    install_namespace,
    own_namespace,
)
from kubevirt.controller import Controller, RateLimitingQueue, SharedInformerFactory, key_of
from kubevirt.handler_launcher_com.sockets import DEFAULT_SHARE_DIR
from kubevirt.log import get_logger
from kubevirt.monitoring.registration import register_all, unregister_all
from kubevirt.monitoring.virt_handler.collector import DomainStatsCollector
from kubevirt.monitoring.virt_handler.machine_types import DeprecatedMachineTypesCollector
from kubevirt.monitoring.virt_handler.migrationstats import MigrationStatsCollector
from kubevirt.monitoring.virt_handler.version import VersionCollector
from kubevirt.service.health import ApiServerHealth
from kubevirt.service.probes import Probe, ProbeServer
from kubevirt.service.tls import CA_CONFIG_MAP, read_ca_bundle
from kubevirt.virt_config.follower import ConfigFollower
from kubevirt.virt_config.tls import TLSConfiguration
from kubevirt.virt_handler.container_disk.mounter import Mounter
from kubevirt.virt_handler.device_manager.plugin import (
    DEFAULT_DEVICE_PLUGINS_DIR,
    DEFAULT_MAX_DEVICES,
    PERMANENT_DEVICES,
    DevicePlugin,
)
from kubevirt.virt_handler.domain_cache import DomainCache
from kubevirt.virt_handler.domain_events import DomainEventLog
from kubevirt.virt_handler.domain_notify import DomainNotify
from kubevirt.virt_handler.heartbeat import Heartbeat
from kubevirt.virt_handler.host_disks import HostDisks
from kubevirt.virt_handler.hotplug_disk.layout import MOUNT_STATE_DIR as HOTPLUG_MOUNT_STATE_DIR
from kubevirt.virt_handler.hotplug_disk.mounter import HotplugMounter
from kubevirt.virt_handler.ksm import KsmHandler
from kubevirt.virt_handler.migratable import MigratabilityFacts
from kubevirt.virt_handler.migration import MIGRATION_TARGET_NODE_NAME_LABEL, MigrationSource, MigrationTarget
from kubevirt.virt_handler.migration_proxy import ProxyManager, TLSFiles, TLSProvider
from kubevirt.virt_handler.network import DEFAULT_PRIVATE_DIR, HandlerNetwork
from kubevirt.virt_handler.node_labeller import capabilities, host
from kubevirt.virt_handler.node_labeller.labeller import NodeLabeller
from kubevirt.virt_handler.notify_pipes import NotifyPipes
from kubevirt.virt_handler.notify_server import NOTIFY_SOCKET, NotifyServer, serve_notify
from kubevirt.virt_handler.orphans import OrphanSweeper
from kubevirt.virt_handler.pod_ownership import PodOwnership
from kubevirt.virt_handler.pod_sockets import connect_launcher
from kubevirt.virt_handler.rest.lifecycle import VMIStore
from kubevirt.virt_handler.rest.server import ServerThread, console_server_thread
from kubevirt.virt_handler.seccomp import ProfileInstaller
from kubevirt.virt_handler.vm_controller import VMController
from kubevirt.virt_handler.watchdog import DEFAULT_TIMEOUT_SECONDS, LauncherWatchdog

COMPONENT = "virt-handler"
NODE_NAME_LABEL = "kubevirt.io/nodeName"
CACHE_SYNC_TIMEOUT = 60.0
EXIT_CANNOT_START = 2


# KubeVirt's VM controller runs 10 workers. Each blocks for a whole launcher sync (define and start,
# seconds on a CPU-limited pod): with 3, ten VMIs started together waited ~10 s for a worker.
VM_CONTROLLER_WORKERS = 10


@dataclass(frozen=True, kw_only=True)
class Options:
    node_name: str
    kubeconfig: str | None = None
    # The kubelet's pods directory, mounted short: a socket path must stay under 108 bytes.
    pods_dir: Path = Path("/pods")
    # The same directory in the host's mount namespace, where container disks are mounted.
    host_pods_dir: Path = Path("/var/lib/kubelet/pods")
    # What was mounted for which VMI, kept across restarts of the handler.
    mount_state_dir: Path = Path(pod_paths.CONTAINER_DISK_MOUNT_STATE_DIR)
    # The same for hotplugged volumes (KubeVirt's hotplug-volume-mount-state).
    hotplug_mount_state_dir: Path = Path(HOTPLUG_MOUNT_STATE_DIR)
    workers: int = VM_CONTROLLER_WORKERS
    device_plugins_dir: Path = DEFAULT_DEVICE_PLUGINS_DIR
    max_devices: int = DEFAULT_MAX_DEVICES
    private_dir: Path = DEFAULT_PRIVATE_DIR  # the node's records of each VMI's pod network
    node_labeller_dir: Path = capabilities.DEFAULT_DIRECTORY
    watchdog_timeout: float = DEFAULT_TIMEOUT_SECONDS
    listen: str = "0.0.0.0"
    # /healthz and /metrics (KubeVirt's install runs it with --port 8443).
    port: int = 8185
    console_server_port: int = 8186
    tls_cert_file: Path = Path("/etc/virt-handler/servercertificates/tls.crt")
    tls_key_file: Path = Path("/etc/virt-handler/servercertificates/tls.key")
    ca_config_map: str = CA_CONFIG_MAP
    externally_managed: bool = False
    # Where the KubeVirt CR is followed; the handler's own namespace when None (all outside a pod).
    namespace: str | None = None
    # The address the migration target listens on and publishes (the handler pod's IP).
    migration_ip: str = ""
    client_cert_file: Path = Path("/etc/virt-handler/clientcertificates/tls.crt")
    client_key_file: Path = Path("/etc/virt-handler/clientcertificates/tls.key")
    # The handler's share directory: launchers' domain and Kubernetes events arrive on its notify
    # socket there, through a pipe socket in each pod.
    share_dir: Path = DEFAULT_SHARE_DIR
    # The kubelet's root (mounted at the same path): KubeVirt's seccomp profile is installed under it.
    kubelet_root: Path = Path("/var/lib/kubelet")


class VirtHandler:
    def __init__(self, options: Options, api: KubeClient) -> None:
        self._options = options
        self._stop = threading.Event()
        self._events = EventRecorder(api, COMPONENT, host=options.node_name)
        self._factory = SharedInformerFactory(api)
        self._config = ConfigFollower.from_informer(self._factory, options.namespace or own_namespace())
        self._labeller = _node_labeller(api, options, self._config)
        self._ksm = KsmHandler(api=api, node=options.node_name, config=self._config.current)
        self._config.on_change(self._ksm.config_changed)
        self._config.on_change(ProfileInstaller(options.kubelet_root, self._config.current).config_changed)
        vmis = self._factory.informer(
            VIRTUAL_MACHINE_INSTANCES, label_selector=f"{NODE_NAME_LABEL}={options.node_name}"
        )
        self._queue = RateLimitingQueue(name="virt-handler-vm")
        self._mounter = Mounter(
            pods_dir=options.pods_dir,
            host_pods_dir=options.host_pods_dir,
            state_dir=options.mount_state_dir,
        )
        # What the VM controller sees of each domain, read back by the console server for diagnosis.
        self._domain_events = DomainEventLog()
        migration_ip = options.migration_ip or _host_address()
        tls_files = TLSFiles(
            options.tls_cert_file, options.tls_key_file, options.client_cert_file, options.client_key_file
        )
        namespace = install_namespace()
        self._proxies = ProxyManager(
            listen_address=migration_ip,
            tls=TLSProvider(
                tls_files,
                ca_bundle=lambda: read_ca_bundle(api, namespace, options.ca_config_map),
                disabled=lambda: self._config.current().migrations.disable_tls,
                tls_config=self._tls_config,
                externally_managed=options.externally_managed,
            ),
        )
        roles: dict[str, Any] = {
            "api": api,
            "events": self._events,
            "node": options.node_name,
            "pods_dir": options.pods_dir,
            "connect": connect_launcher,
            "proxies": self._proxies,
        }
        domain_cache = DomainCache()
        self._notify_pipes = NotifyPipes(options.share_dir / NOTIFY_SOCKET)
        self._notify_servicer = NotifyServer(
            cache=domain_cache, enqueue=self._queue.add, vmi_store=vmis.store, events=self._events
        )
        self._notify_server: grpc.Server | None = None
        network = HandlerNetwork(private_dir=options.private_dir)
        ownership = PodOwnership()
        host_disks = HostDisks(events=self._events, config=self._config.current)
        # One node record per VMI: a migration target's mounts are the VM controller's after the take-over.
        hotplug = HotplugMounter(
            pods_dir=options.pods_dir,
            host_pods_dir=options.host_pods_dir,
            state_dir=options.hotplug_mount_state_dir,
        )
        reconciler = VMController(
            api=api,
            events=self._events,
            vmi_store=vmis.store,
            node=options.node_name,
            pods_dir=options.pods_dir,
            connect=connect_launcher,
            network=network,
            migratability_facts=_migratability_facts(options),
            domain_events=self._domain_events,
            migration_source=MigrationSource(**roles),
            mounter=self._mounter,
            hotplug=hotplug,
            notify=DomainNotify(domain_cache, self._notify_pipes),
            ownership=ownership,
            host_disks=host_disks,
            config=self._config.current,
        )
        self._reconciler = reconciler
        enqueue = self._queue.add
        # Migration targets: VMIs still owned by another node, labelled for this one.
        targets = self._factory.informer(
            VIRTUAL_MACHINE_INSTANCES,
            label_selector=f"{MIGRATION_TARGET_NODE_NAME_LABEL}={options.node_name}",
        )
        self._target_queue = RateLimitingQueue(name="virt-handler-target")  # KubeVirt's queue name
        target = MigrationTarget(
            vmi_store=targets.store,
            address=migration_ip,
            mounter=self._mounter,
            hotplug=hotplug,
            network=network,
            ownership=ownership,
            host_disks=host_disks,
            **roles,
        )
        self._target_controller = Controller("virt-handler-target", self._target_queue, target, workers=2)
        targets.add_event_handler(
            lambda obj: self._target_queue.add(key_of(obj)),
            lambda _old, new: self._target_queue.add(key_of(new)),
            lambda obj: self._target_queue.add(key_of(obj)),
        )

        self._controller = Controller("virt-handler-vm", self._queue, reconciler, workers=options.workers)
        self._watchdog = LauncherWatchdog(
            vmi_store=vmis.store,
            node=options.node_name,
            pods_dir=options.pods_dir,
            enqueue=enqueue,
            timeout=options.watchdog_timeout,
        )
        self._orphans = OrphanSweeper(
            vmi_store=vmis.store,
            target_store=targets.store,
            pods_dir=options.pods_dir,
            connect=connect_launcher,
        )

        def deleted(obj: dict[str, Any]) -> None:
            enqueue(key_of(obj))
            self._orphans.poke()  # its launcher may hold a domain nobody else will stop

        vmis.add_event_handler(
            lambda obj: enqueue(key_of(obj)),
            lambda _old, new: enqueue(key_of(new)),
            deleted,
        )
        self._heartbeat = Heartbeat(api, options.node_name)
        self._console = self._console_server(options, api, vmis.store)
        self._health = ApiServerHealth(api.server_version, self._config.resource_version)
        self._probes: ProbeServer | None = None
        # KubeVirt's virt-handler metrics, read when /metrics is scraped: the per-VMI series from the
        # launchers, a migrating VMI's progress (polled while it lasts) and the node's build and machines.
        self._migration_stats = MigrationStatsCollector(
            get_vmi=vmis.store.get_by_key,
            node=options.node_name,
            pods_dir=options.pods_dir,
            connect=connect_launcher,
        )
        vmis.add_event_handler(
            self._migration_stats.observe, lambda _old, new: self._migration_stats.observe(new)
        )
        self._domain_stats = DomainStatsCollector(
            vmis=vmis.store.list, node=options.node_name, pods_dir=options.pods_dir, connect=connect_launcher
        )
        self._registered: list[Collector] = []
        self._collectors: list[Collector] = [
            VersionCollector(),
            self._domain_stats,
            self._migration_stats,
            DeprecatedMachineTypesCollector(
                node=options.node_name,
                machine_types=self._labeller.deprecated_machine_types if self._labeller else (),
            ),
        ]
        self._plugins = [
            DevicePlugin(device, plugins_dir=options.device_plugins_dir, count=options.max_devices)
            for device in PERMANENT_DEVICES
        ]

    def _console_server(self, options: Options, api: KubeClient, vmis: VMIStore) -> ServerThread | None:
        if not (options.tls_cert_file.is_file() and options.tls_key_file.is_file()):
            # Without its certificate it could serve nobody; the rest of the handler still works.
            get_logger().error(
                "console server disabled: no server certificate", cert_file=str(options.tls_cert_file)
            )
            return None
        return console_server_thread(
            api=api,
            vmis=vmis,
            events=self._events,
            pods_dir=options.pods_dir,
            node=options.node_name,
            namespace=install_namespace(),
            cert_file=options.tls_cert_file,
            key_file=options.tls_key_file,
            listen=options.listen,
            port=options.console_server_port,
            ca_config_map=options.ca_config_map,
            externally_managed=options.externally_managed,
            domain_events=self._domain_events,
            domain_changed=self._queue.add,  # pause and the like: the VMI's status follows at once
            tls_config=self._tls_config,
        )

    def _tls_config(self) -> TLSConfiguration:
        """The cluster's ``tlsConfiguration``, which every listener of the handler follows."""
        return self._config.current().tls

    def _start_notify_server(self) -> None:
        path = self._options.share_dir / NOTIFY_SOCKET
        try:
            self._notify_server = serve_notify(path, self._notify_servicer)
        except OSError as err:
            # VMIs are still reconciled, on their resync period instead of at each domain change.
            get_logger().error("notify server could not start", socket=str(path), reason=str(err))

    def probes(self) -> dict[str, Probe]:
        return {"/healthz": self._health}

    def _start_probe_server(self) -> None:
        options = self._options
        try:
            self._probes = ProbeServer(
                options.listen,
                options.port,
                cert_file=options.tls_cert_file,
                key_file=options.tls_key_file,
                probes=self.probes(),
                tls_config=self._tls_config,
            )
        except (OSError, ValueError) as err:
            get_logger().error("health server could not start", reason=str(err), port=options.port)
            return
        self._registered = register_all(self._collectors)
        self._migration_stats.start()
        self._probes.start()

    def stop(self) -> None:
        self._stop.set()

    def _thread(self, target: Callable[[threading.Event], None], name: str) -> threading.Thread:
        thread = threading.Thread(target=target, args=(self._stop,), name=name, daemon=True)
        thread.start()
        return thread

    def run(self) -> int:
        log = get_logger()
        beats = self._thread(self._heartbeat.run, "heartbeat")
        helpers = [self._thread(plugin.run, plugin.device.name) for plugin in self._plugins]
        if self._labeller is not None:
            helpers.append(self._thread(self._labeller.run, "node-labeller"))
        helpers.append(self._thread(self._ksm.run, "ksm"))
        self._factory.start()
        self._start_probe_server()
        if self._console is not None:
            try:
                self._console.start()
            except OSError as err:
                log.error("console server could not start", reason=str(err))
                self._console = None
        if not self._factory.wait_for_cache_sync(CACHE_SYNC_TIMEOUT):
            log.error("the VMI cache did not sync")
            self._stop.set()
        else:
            log.info("virt-handler running", node=self._options.node_name)
            self._start_notify_server()
            # Mounts recorded by an earlier run whose VMI went away meanwhile: their keys clean them up.
            for key in self._mounter.recorded_keys():
                self._queue.add(key)
            # Both need the synced cache: a launcher is an orphan only if no known VMI lists its pod.
            helpers.append(self._thread(self._watchdog.run, "launcher-watchdog"))
            helpers.append(self._thread(self._orphans.run, "orphans"))
            helpers.append(self._thread(self._target_controller.run, "migration-target"))
            self._controller.run(self._stop)
        self._stop.wait()
        if self._probes is not None:
            self._probes.stop()
            unregister_all(self._registered)
        self._migration_stats.close()
        self._domain_stats.close()
        if self._console is not None:
            self._console.stop()
        self._factory.stop()
        self._proxies.shut_down()
        if self._notify_server is not None:
            self._notify_server.stop(grace=1)
        self._notify_pipes.shut_down()
        self._reconciler.close()
        self._events.stop()
        beats.join(timeout=10)
        for thread in helpers:
            thread.join(timeout=5)
        return 0


def _host_address() -> str:
    """This host's address when no pod IP was given (loopback, logged, when the name resolves to none)."""
    try:
        return socket.gethostbyname(socket.gethostname())
    except OSError as err:
        get_logger().warning("no address for migrations: using loopback", reason=str(err))
        return "127.0.0.1"


def _node_labeller(api: KubeClient, options: Options, config: ConfigFollower) -> NodeLabeller | None:
    """The node labeller, or None (logged) when the node's capabilities were not written."""
    try:
        caps = capabilities.load(options.node_labeller_dir)
    except capabilities.CapabilitiesError as err:
        get_logger().error("node-labeller could not load the node's capabilities", reason=str(err))
        return None
    labeller = NodeLabeller(
        api=api,
        events=EventRecorder(api, "node-labeller", host=options.node_name),
        node=options.node_name,
        capabilities=caps,
        config=config.current,
        realtime=host.realtime_capable,
        hyperv=host.hyperv_capabilities(),
    )
    config.on_change(labeller.config_changed)
    return labeller


def _migratability_facts(options: Options) -> MigratabilityFacts:
    """What migratability needs from the node; without its capabilities, no host-model CPU."""
    try:
        caps = capabilities.load(options.node_labeller_dir, features=False)
    except capabilities.CapabilitiesError:
        return MigratabilityFacts()  # the labeller already logged why
    return MigratabilityFacts(host_cpu_model=caps.host_model.name if caps.host_model else "")


def run(options: Options) -> int:
    """Run until SIGTERM or SIGINT. Returns the exit code."""
    log = get_logger()
    try:
        api = KubeClient.from_kubeconfig(options.kubeconfig, user_agent=COMPONENT)
    except KubeConfigError as err:
        log.error("virt-handler cannot reach the cluster", reason=str(err))
        return EXIT_CANNOT_START
    handler = VirtHandler(options, api)

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        log.info("stopping", signal=signal.Signals(signum).name)
        handler.stop()

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, on_signal)
    return handler.run()
