"""virt-handler's application object: what runs once the flags are parsed.

One process per node: the heartbeat keeps the node labelled schedulable, the device plugins advertise the
host devices launcher pods request, and the VM controller drives every VMI labelled with this node's name
through its virt-launcher.
"""

from __future__ import annotations

import signal
import threading
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

from kubevirt.client import VIRTUAL_MACHINE_INSTANCES, EventRecorder, KubeClient, KubeConfigError
from kubevirt.controller import Controller, RateLimitingQueue, SharedInformerFactory, key_of
from kubevirt.handler_launcher_com.cmd.client import LauncherClient
from kubevirt.log import get_logger
from kubevirt.virt_handler.container_disk.mounter import Mounter
from kubevirt.virt_handler.device_manager.plugin import (
    DEFAULT_DEVICE_PLUGINS_DIR,
    DEFAULT_MAX_DEVICES,
    PERMANENT_DEVICES,
    DevicePlugin,
)
from kubevirt.virt_handler.heartbeat import Heartbeat
from kubevirt.virt_handler.vm_controller import VMController

COMPONENT = "virt-handler"
NODE_NAME_LABEL = "kubevirt.io/nodeName"
CACHE_SYNC_TIMEOUT = 60.0
EXIT_CANNOT_START = 2


@dataclass(frozen=True, kw_only=True)
class Options:
    node_name: str
    kubeconfig: str | None = None
    # The kubelet's pods directory, mounted short: a socket path must stay under 108 bytes.
    pods_dir: Path = Path("/pods")
    # The same directory in the host's mount namespace, where container disks are mounted.
    host_pods_dir: Path = Path("/var/lib/kubelet/pods")
    # What was mounted for which VMI, kept across restarts of the handler.
    mount_state_dir: Path = Path("/var/run/kubevirt-private/container-disk-mount-state")
    workers: int = 3
    device_plugins_dir: Path = DEFAULT_DEVICE_PLUGINS_DIR
    max_devices: int = DEFAULT_MAX_DEVICES


class VirtHandler:
    def __init__(self, options: Options, api: KubeClient) -> None:
        self._options = options
        self._stop = threading.Event()
        self._events = EventRecorder(api, COMPONENT, host=options.node_name)
        self._factory = SharedInformerFactory(api)
        vmis = self._factory.informer(
            VIRTUAL_MACHINE_INSTANCES, label_selector=f"{NODE_NAME_LABEL}={options.node_name}"
        )
        self._queue = RateLimitingQueue(name="virt-handler-vm")
        self._mounter = Mounter(
            pods_dir=options.pods_dir,
            host_pods_dir=options.host_pods_dir,
            state_dir=options.mount_state_dir,
        )
        reconciler = VMController(
            api=api,
            events=self._events,
            vmi_store=vmis.store,
            node=options.node_name,
            pods_dir=options.pods_dir,
            connect=LauncherClient,
            mounter=self._mounter,
        )
        enqueue = self._queue.add
        vmis.add_event_handler(
            lambda obj: enqueue(key_of(obj)),
            lambda _old, new: enqueue(key_of(new)),
            lambda obj: enqueue(key_of(obj)),
        )
        self._controller = Controller("virt-handler-vm", self._queue, reconciler, workers=options.workers)
        self._heartbeat = Heartbeat(api, options.node_name)
        self._plugins = [
            DevicePlugin(device, plugins_dir=options.device_plugins_dir, count=options.max_devices)
            for device in PERMANENT_DEVICES
        ]

    def stop(self) -> None:
        self._stop.set()

    def run(self) -> int:
        log = get_logger()
        beats = threading.Thread(
            target=self._heartbeat.run, args=(self._stop,), name="heartbeat", daemon=True
        )
        beats.start()
        plugins = [
            threading.Thread(target=plugin.run, args=(self._stop,), name=plugin.device.name, daemon=True)
            for plugin in self._plugins
        ]
        for thread in plugins:
            thread.start()
        self._factory.start()
        if not self._factory.wait_for_cache_sync(CACHE_SYNC_TIMEOUT):
            log.error("the VMI cache did not sync")
            self._stop.set()
        else:
            log.info("virt-handler running", node=self._options.node_name)
            # Mounts recorded by an earlier run whose VMI went away meanwhile: their keys clean them up.
            for key in self._mounter.recorded_keys():
                self._queue.add(key)
            self._controller.run(self._stop)
        self._stop.wait()
        self._factory.stop()
        self._events.stop()
        beats.join(timeout=10)
        for thread in plugins:
            thread.join(timeout=5)
        return 0


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
