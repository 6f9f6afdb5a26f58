"""virt-launcher's process: libvirt (its own libvirtd unless told otherwise), the command server, domain
events to virt-handler, and the watch that decides when the launcher's work is over.

The launcher exits, and says why, when its domain stopped (shut down, killed or migrated away) and the
final event went out, when a stop signal's grace period ran out and the domain was killed, when libvirt
died, when virt-handler released a migration target, or when no domain started within ``qemu_timeout``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

import libvirt

from kubevirt import pod_paths
from kubevirt.handler_launcher_com.cmd.client import LauncherClient, LauncherClientError
from kubevirt.handler_launcher_com.cmd.v1 import cmd_pb2
from kubevirt.handler_launcher_com.sockets import cmd_socket_path, init_socket_path, notify_socket_path
from kubevirt.log import get_logger
from kubevirt.virt_launcher import reaper
from kubevirt.virt_launcher.events import DomainEventForwarder, start_event_loop
from kubevirt.virt_launcher.libvirt_session import SessionLayout
from kubevirt.virt_launcher.libvirtd import Libvirtd, LibvirtdError
from kubevirt.virt_launcher.network import PodNetworkConverter
from kubevirt.virt_launcher.notify_client import NotifyClient
from kubevirt.virt_launcher.storage import PodStorage, StorageDirs
from kubevirt.virt_launcher.virtwrap.cmd_server.server import CommandServer, serve
from kubevirt.virt_launcher.virtwrap.errors import ManagerError
from kubevirt.virt_launcher.virtwrap.manager import Converter, DomainManager
from kubevirt.virt_launcher.virtwrap.migration import Migrator
from kubevirt.virt_launcher.virtwrap.node import NodeFacts, accepts_slotless_max_memory, decide_emulation
from kubevirt.virt_launcher.virtwrap.vmi import VMIFacts

EXIT_OK = 0
EXIT_FAILURE = 1
FINAL_EVENT_WAIT = 15.0
UNOBSERVED_DELETE_WAIT = 2.0


# The guest-console-log container runs as this user and reads the serial log QEMU appends to.
CONSOLE_LOG_READER_UID = 107


def prepare_private_dir(private: Path, *, non_root: bool = False) -> None:
    """The VMI's private directory and its serial console log, both handed to the console log reader
    before libvirt opens the log for appending (it keeps an existing file's owner). A non-root launcher
    is that reader's user already: QEMU creates the log as theirs."""
    private.mkdir(parents=True, exist_ok=True)
    if non_root:
        return
    os.chown(private, CONSOLE_LOG_READER_UID, CONSOLE_LOG_READER_UID)
    fd = os.open(
        private / pod_paths.SERIAL_CONSOLE_LOG, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600
    )
    try:
        os.fchown(fd, CONSOLE_LOG_READER_UID, CONSOLE_LOG_READER_UID)
    finally:
        os.close(fd)


def user_mode_mismatch(run_as_nonroot: bool, euid: int) -> str:
    """Why libvirt cannot run in the mode the flags ask for as this user (empty: it can): system mode
    needs root, session mode a non-root user."""
    if run_as_nonroot and euid == 0:
        return (
            "--run-as-nonroot, but virt-launcher runs as root: libvirt's session mode needs a non-root user"
        )
    if not run_as_nonroot and euid != 0:
        return (
            f"virt-launcher runs as uid {euid} without --run-as-nonroot: libvirt's system mode needs root "
            "(a non-root launcher pod passes --run-as-nonroot)"
        )
    return ""


@dataclasses.dataclass(frozen=True)
class LauncherConfig:
    name: str
    namespace: str
    uid: str
    share_dir: Path = Path(pod_paths.VIRT_SHARE_DIR)
    private_dir: Path = Path(pod_paths.VIRT_PRIVATE_DIR)
    ephemeral_disk_dir: Path = Path(pod_paths.EPHEMERAL_DISK_DIR)
    container_disk_dir: Path = Path(pod_paths.CONTAINER_DISK_DIR)
    hotplug_disk_dir: Path = Path(pod_paths.HOTPLUG_DISK_DIR)
    grace_period_seconds: int = 30
    qemu_timeout: float = 180.0
    libvirt_uri: str | None = None
    libvirt_runtime_dir: Path | None = None
    libvirt_capabilities_cache: Path | None = None
    allow_emulation: bool = False
    force_emulation: bool = False
    pod_name: str = ""
    libvirt_log_filters: str = ""
    ovmf_path: str = ""
    disk_memory_limit: int = 0
    run_as_nonroot: bool = False

    @property
    def vmi_private_dir(self) -> Path:
        return self.private_dir / self.uid

    @property
    def use_emulation(self) -> bool:
        """QEMU's TCG when forced, or when allowed and /dev/kvm cannot be used."""
        return decide_emulation(force=self.force_emulation, allow=self.allow_emulation)


class Launcher:
    def __init__(
        self, config: LauncherConfig, converter: Converter, *, warm_up: Callable[[], None] | None = None
    ) -> None:
        self.config = config
        self._converter = converter
        self._storage = self._pod_storage(StorageDirs().empty_disk_dir)
        self._notifier: NotifyClient | None = None  # virt-handler's notify socket, once serving
        self._warm_up = warm_up or (lambda: None)
        self._stop = threading.Event()
        self._signal_name = ""
        self._target_released = threading.Event()
        self._changed = threading.Event()
        self._libvirt_closed = threading.Event()
        self._log = get_logger(
            name=config.name, namespace=config.namespace, uid=config.uid, kind="VirtualMachineInstance"
        )

    # -- signals -----------------------------------------------------------------------------------

    def install_signal_handlers(self) -> None:
        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGQUIT, signal.SIGHUP):
            signal.signal(signum, self._on_signal)

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        if not self._stop.is_set():
            self._signal_name = signal.Signals(signum).name
        self._stop.set()
        self._changed.set()

    # -- run ---------------------------------------------------------------------------------------

    def run(self) -> int:
        cfg = self.config
        # Before anything is written: our own libvirtd must be able to run as this user in this mode.
        mismatch = "" if cfg.libvirt_uri else user_mode_mismatch(cfg.run_as_nonroot, os.geteuid())
        if mismatch:
            self._log.error("cannot start libvirtd", reason=mismatch)
            return EXIT_FAILURE
        if reaper.become_subreaper():
            reaper.start_reaping()
        try:
            self._prepare_directories()
        except OSError as err:
            self._log.error("cannot create the launcher's directories", reason=str(err))
            return EXIT_FAILURE
        self._warm_up()  # the converter's imports overlap with libvirtd's start
        start_event_loop()
        libvirtd: Libvirtd | None = None
        uri = cfg.libvirt_uri
        if uri is None:
            runtime = cfg.libvirt_runtime_dir or (cfg.private_dir / pod_paths.LIBVIRT)
            libvirtd = Libvirtd(
                runtime,
                capabilities_cache=cfg.libvirt_capabilities_cache,
                log_filters=cfg.libvirt_log_filters,
                # KubeVirt's XDG homes: libvirt's session state under the private directory.
                session=SessionLayout(home=cfg.private_dir) if cfg.run_as_nonroot else None,
            )
            try:
                libvirtd.start()
            except (LibvirtdError, OSError) as err:
                self._log.error("cannot start libvirtd", runtime_dir=str(runtime), reason=str(err))
                libvirtd.stop()
                return EXIT_FAILURE
            uri = libvirtd.uri
            # Empty disks go to libvirt's runtime directory, which is our libvirtd's own.
            self._storage = self._pod_storage(libvirtd.run_dir / pod_paths.EMPTY_DISKS)
        try:
            conn = self._connect(uri)
        except libvirt.libvirtError as err:
            self._log.error("cannot connect to libvirt", uri=uri, reason=err.get_error_message())
            if libvirtd is not None:
                libvirtd.stop()
            return EXIT_FAILURE
        try:
            return self._serve(conn, libvirtd)
        finally:
            with contextlib.suppress(libvirt.libvirtError):
                conn.close()
            if libvirtd is not None:
                libvirtd.stop()

    def _serve(self, conn: libvirt.virConnect, libvirtd: Libvirtd | None) -> int:
        cfg = self.config
        # What the node contributes to every domain, decided once: emulation, and whether this libvirt
        # takes memory hotplug room without slots.
        node = NodeFacts(
            emulation=cfg.use_emulation,
            slotless_max_memory=accepts_slotless_max_memory(conn.getLibVersion()),
            ovmf_dir=cfg.ovmf_path,
        )
        forwarder: DomainEventForwarder | None = None

        def changed() -> None:
            if forwarder is not None:
                forwarder.poke()

        converter = PodNetworkConverter(self._convert)
        manager = DomainManager(
            conn,
            converter,
            node=node,
            on_domain_change=changed,
            pre_start_hooks=[self._pre_start],
            own_domain=f"{cfg.namespace}_{cfg.name}",
        )
        migrator = Migrator(manager, cfg.share_dir)
        servicer = CommandServer(
            manager, migrator, pod_name=cfg.pod_name, on_target_cleanup=self._release_target
        )
        init_socket = init_socket_path(cfg.share_dir)
        try:
            server = serve(init_socket, servicer)
        except (OSError, RuntimeError) as err:  # grpc reports a socket it cannot bind as RuntimeError
            self._log.error("cannot serve commands", socket=str(init_socket), reason=str(err))
            return EXIT_FAILURE
        try:
            try:
                self._ping(init_socket)
            except LauncherClientError as err:
                self._log.error(
                    "the command server does not answer", socket=str(init_socket), reason=str(err)
                )
                return EXIT_FAILURE
            # Events go to virt-handler whenever its notify socket exists (it may appear later).
            notifier = NotifyClient(notify_socket_path(cfg.share_dir))
            self._notifier = notifier
            forwarder = DomainEventForwarder(manager, notifier)
            forwarder.add_listener(lambda *_: self._changed.set())
            forwarder.start()
            os.rename(init_socket, cmd_socket_path(cfg.share_dir))
            self._log.info("Marked as ready", socket=str(cmd_socket_path(cfg.share_dir)))
            code, reason = self._watch(manager, forwarder, libvirtd)
            self._log.info("Exiting...", reason=reason, code=code)
            forwarder.stop()
            notifier.close()
            return code
        finally:
            converter.stop()
            server.stop(grace=1).wait()
            manager.close()  # the guest agent's poller, pending thaw and workers
            for path in (init_socket, cmd_socket_path(cfg.share_dir)):
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()

    def _watch(
        self, manager: DomainManager, forwarder: DomainEventForwarder, libvirtd: Libvirtd | None
    ) -> tuple[int, str]:
        cfg = self.config
        started = time.monotonic()
        grace_deadline: float | None = None
        seen_active = False
        while True:
            self._changed.clear()
            if self._libvirt_closed.is_set() or (libvirtd is not None and not libvirtd.alive()):
                return EXIT_FAILURE, "libvirt died"
            if self._target_released.is_set():
                return EXIT_OK, "released as migration target by virt-handler"
            active = self._domain_active(manager)
            seen_active = seen_active or active
            if self._stop.is_set() and grace_deadline is None:
                grace_deadline = time.monotonic() + cfg.grace_period_seconds
                self._log.info(
                    "stop signal received", signal=self._signal_name, grace=cfg.grace_period_seconds
                )
                with contextlib.suppress(ManagerError, libvirt.libvirtError):
                    manager.mark_for_graceful_shutdown()
            if seen_active and not active:
                self._await_final_event(manager, forwarder)
                if grace_deadline is not None and time.monotonic() >= grace_deadline:
                    return EXIT_OK, f"{self._signal_name}: grace period expired, the domain was killed"
                return EXIT_OK, "the domain is gone (shut down, killed or migrated away)"
            if not active and self._stop.is_set():
                return EXIT_OK, f"{self._signal_name} before the domain started"
            if not seen_active and time.monotonic() - started > cfg.qemu_timeout:
                return EXIT_FAILURE, f"timed out waiting for the domain to start ({cfg.qemu_timeout:.0f}s)"
            if active and grace_deadline is not None and time.monotonic() >= grace_deadline:
                self._log.info("grace period expired: killing the domain")
                self._kill(manager)
                continue
            self._changed.wait(1.0)

    def _await_final_event(self, manager: DomainManager, forwarder: DomainEventForwarder) -> None:
        """Give virt-handler a moment to delete the stopped domain, so the final event goes out."""
        # Without virt-handler listening, only allow a caller's kill-then-delete sequence to complete.
        wait = FINAL_EVENT_WAIT if forwarder.reports_to_handler else UNOBSERVED_DELETE_WAIT
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline and not forwarder.domain_gone.is_set():
            if self._stop.is_set() and manager.the_domain() is None:
                break
            forwarder.domain_gone.wait(0.2)
        if forwarder.domain_gone.is_set():
            forwarder.final_event_delivered.wait(max(0.0, deadline - time.monotonic()))

    def _domain_active(self, manager: DomainManager) -> bool:
        try:
            dom = manager.the_domain()
            return bool(dom is not None and dom.isActive())
        except (ManagerError, libvirt.libvirtError):
            return False

    def _kill(self, manager: DomainManager) -> None:
        dom = manager.the_domain()
        if dom is None:
            return
        with contextlib.suppress(libvirt.libvirtError):
            dom.destroyFlags(libvirt.VIR_DOMAIN_DESTROY_GRACEFUL)
        with contextlib.suppress(libvirt.libvirtError):
            if dom.isActive():
                dom.destroy()

    # -- helpers -----------------------------------------------------------------------------------

    def _release_target(self) -> None:
        self._target_released.set()
        self._changed.set()

    def _pod_storage(self, empty_disk_dir: Path) -> PodStorage:
        cfg = self.config
        dirs = StorageDirs(
            container_disk_dir=cfg.container_disk_dir,
            ephemeral_disk_dir=cfg.ephemeral_disk_dir,
            private_dir=cfg.private_dir,
            empty_disk_dir=empty_disk_dir,
            hotplug_disk_dir=cfg.hotplug_disk_dir,
        )
        return PodStorage(dirs, disk_memory_limit=cfg.disk_memory_limit)

    def _convert(self, vmi: VMIFacts, options: Any, node: NodeFacts) -> str:
        """The converter, told each containerDisk image's format and which volumes are block devices
        (KubeVirt's launcher finds both out itself)."""
        node = dataclasses.replace(node, block_volumes=self._storage.block_volumes(vmi.view))
        infos = self._storage.disks_info(vmi.view)
        if infos:
            merged = cmd_pb2.VirtualMachineOptions()
            if options is not None:
                merged.CopyFrom(options)
            for name, info in infos.items():
                merged.DisksInfo[name].CopyFrom(
                    cmd_pb2.DiskInfo(
                        format=info.format,
                        backingFile=info.backing_file,
                        actualSize=info.actual_size,
                        virtualSize=info.virtual_size,
                    )
                )
            options = merged
        return self._converter(vmi, options, node)

    def _pre_start(self, facts: VMIFacts) -> None:
        private = self.config.private_dir / facts.uid if facts.uid else self.config.vmi_private_dir
        prepare_private_dir(private, non_root=self.config.run_as_nonroot)
        self._storage.prepare(facts.view)

    def _prepare_directories(self) -> None:
        cfg = self.config
        (cfg.share_dir / pod_paths.SOCKETS).mkdir(parents=True, exist_ok=True)
        prepare_private_dir(cfg.vmi_private_dir, non_root=cfg.run_as_nonroot)

    def _connect(self, uri: str, timeout: float = 10.0) -> libvirt.virConnect:
        libvirt.registerErrorHandler(lambda *_: None, None)  # errors are raised, not printed
        deadline = time.monotonic() + timeout
        while True:
            try:
                conn = libvirt.open(uri)
                break
            except libvirt.libvirtError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)

        def closed(connection: Any, reason: int, opaque: Any) -> None:
            self._libvirt_closed.set()
            self._changed.set()

        with contextlib.suppress(libvirt.libvirtError):
            conn.registerCloseCallback(closed, None)
        self._log.info("connected to libvirt", uri=uri)
        return conn

    def _ping(self, socket_path: Path, timeout: float = 15.0) -> None:
        deadline = time.monotonic() + timeout
        with LauncherClient(socket_path) as client:
            while True:
                try:
                    client.ping()
                    return
                except LauncherClientError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.1)
