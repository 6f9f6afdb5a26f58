"""cdi-controller's process: the informers, the controllers and their queues, leader election and
the health endpoint.

Event wiring follows CDI's watches: a DataVolume is looked at again when it, its claim, or its claim's
worker pod changes, and (while it has no claim) when storage classes or profiles change; a claim's import
is looked at when the claim or its importer pod changes, its upload when the claim, its upload server pod
or that pod's Service changes; the CDIConfig when it, the CDI CR or a storage class changes; a
StorageProfile when its class, itself or a VolumeSnapshotClass changes.

The upload controller runs when an upload server image is given. It reads the upload server signer and
the client CA bundle from CDI's namespace (the one this process runs in) when it makes a pod. The clone
controller runs when a cloner image is given as well: a clone target claim is looked at when it or its
upload server changes, and when its source pod (in the source namespace) changes.
"""

from __future__ import annotations

import signal
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass
from types import FrameType
from typing import Any

from kubevirt.cdi.resources import STORAGE_PROFILES
from kubevirt.cdi_controller import meta
from kubevirt.cdi_controller.caches import Caches
from kubevirt.cdi_controller.clone import CloneController, target_key_of_source_pod
from kubevirt.cdi_controller.clonetoken import SigningKey
from kubevirt.cdi_controller.config import ConfigController
from kubevirt.cdi_controller.datavolume import DataVolumeController, data_volume_key_of_claim
from kubevirt.cdi_controller.health import HealthServer
from kubevirt.cdi_controller.importer import ImportController, claim_key_of_pod
from kubevirt.cdi_controller.importerpod import ImporterSettings
from kubevirt.cdi_controller.progress import MetricsFetcher
from kubevirt.cdi_controller.storageprofile import StorageProfileController
from kubevirt.cdi_controller.upload import UploadController, is_upload_pod
from kubevirt.cdi_controller.uploadcerts import ServerCertIssuer
from kubevirt.cdi_controller.uploadpod import UploadSettings
from kubevirt.client import (
    PERSISTENT_VOLUME_CLAIMS,
    PODS,
    EventRecorder,
    KubeApi,
    KubeClient,
    NotFoundError,
    install_namespace,
    own_namespace,
)
from kubevirt.client.resources import (
    CDI_CONFIGS,
    CDIS,
    CUSTOM_RESOURCE_DEFINITIONS,
    DATA_VOLUMES,
    SERVICES,
    STORAGE_CLASSES,
    VOLUME_SNAPSHOT_CLASSES,
)
from kubevirt.controller import (
    Controller,
    LeaderElector,
    RateLimitingQueue,
    Reconciler,
    SharedInformerFactory,
    key_of,
)
from kubevirt.log import get_logger
from kubevirt.service.startup import cluster_client
from kubevirt_api.cdi import constants as cdi
from kubevirt_api.view import JSON

COMPONENT = cdi.CONTROLLER_NAME
LEASE_NAME = cdi.CONTROLLER_LEASE
EXIT_FAILED = 1
EXIT_CANNOT_START = 2
CACHE_SYNC_TIMEOUT = 120.0
SNAPSHOT_CLASS_CRD = f"{VOLUME_SNAPSHOT_CLASSES.plural}.{VOLUME_SNAPSHOT_CLASSES.group}"
# Only the upload servers' Services are watched.
UPLOAD_SERVICES_SELECTOR = f"{cdi.Label.COMPONENT}={cdi.Upload.COMPONENT_VALUE}"


@dataclass(frozen=True, kw_only=True)
class Options:
    importer_image: str
    uploadserver_image: str = ""  # none: no upload controller
    cloner_image: str = ""  # none (or no upload server image): no host-assisted clones
    pull_policy: str = "IfNotPresent"
    verbosity: str = "1"
    kubeconfig: str | None = None
    namespace: str | None = None
    threads: int = 3
    health_address: str = "0.0.0.0"
    health_port: int = 8080
    leader_elect: bool = True
    cache_sync_timeout: float = CACHE_SYNC_TIMEOUT
    # Where the upload server signer and client CA bundle are (default: this pod's namespace, else cdi).
    cdi_namespace: str | None = None


class Controllers:
    """The informers, queues and controllers of one cdi-controller; ``start`` runs them until stopped."""

    def __init__(self, api: KubeClient, options: Options, *, watch_snapshot_classes: bool = True) -> None:
        self._options = options
        self.events = EventRecorder(api, COMPONENT, host=socket.gethostname())
        self.factory = SharedInformerFactory(api)
        informer = self.factory.informer
        self.caches = Caches(
            data_volumes=informer(DATA_VOLUMES).store,
            pvcs=informer(PERSISTENT_VOLUME_CLAIMS).store,
            pods=informer(PODS).store,
            storage_classes=informer(STORAGE_CLASSES).store,
            storage_profiles=informer(STORAGE_PROFILES).store,
            cdi_configs=informer(CDI_CONFIGS).store,
            cdis=informer(CDIS).store,
        )
        if watch_snapshot_classes:
            self.caches.volume_snapshot_classes = informer(VOLUME_SNAPSHOT_CLASSES).store
        self._uploads = bool(options.uploadserver_image)
        if self._uploads:
            self.caches.services = informer(SERVICES, label_selector=UPLOAD_SERVICES_SELECTOR).store
        self._clones = self._uploads and bool(options.cloner_image)
        names = ["datavolume", "import", "config", "storageprofile"]
        names += (["upload"] if self._uploads else []) + (["clone"] if self._clones else [])
        self.queues = {name: RateLimitingQueue(name) for name in names}
        settings = ImporterSettings(
            image=options.importer_image, pull_policy=options.pull_policy, verbosity=options.verbosity
        )
        cdi_namespace = options.cdi_namespace or own_namespace() or cdi.CDI_NAMESPACE
        signing_key = SigningKey(api, cdi_namespace)
        self.reconcilers: dict[str, Reconciler] = {
            "datavolume": DataVolumeController(
                api=api,
                events=self.events,
                caches=self.caches,
                fetch_metrics=MetricsFetcher(),
                signing_key=signing_key,
            ),
            "import": ImportController(api=api, events=self.events, caches=self.caches, settings=settings),
            "config": ConfigController(api=api, events=self.events, caches=self.caches),
            "storageprofile": StorageProfileController(api=api, caches=self.caches),
        }
        if self._uploads:
            self.reconcilers["upload"] = UploadController(
                api=api,
                events=self.events,
                caches=self.caches,
                settings=UploadSettings(
                    image=options.uploadserver_image,
                    pull_policy=options.pull_policy,
                    verbosity=options.verbosity,
                ),
                issuer=ServerCertIssuer(api, cdi_namespace),
            )
        if self._clones:
            self.reconcilers["clone"] = CloneController(
                api=api,
                events=self.events,
                caches=self.caches,
                settings=UploadSettings(
                    image=options.cloner_image, pull_policy=options.pull_policy, verbosity=options.verbosity
                ),
                issuer=ServerCertIssuer(api, cdi_namespace),
                signing_key=signing_key,
            )
        self._wire(watch_snapshot_classes)
        self.synced = threading.Event()

    def _wire(self, watch_snapshot_classes: bool) -> None:
        on = self._on
        on(DATA_VOLUMES, lambda dv: self._add("datavolume", key_of(dv)))
        on(PERSISTENT_VOLUME_CLAIMS, self._claim_changed)
        on(PODS, self._pod_changed)
        on(STORAGE_CLASSES, self._class_changed)
        on(STORAGE_PROFILES, self._profile_changed)
        on(CDI_CONFIGS, lambda _: self._add("config", cdi.CDI_CONFIG_NAME))
        on(CDIS, lambda _: self._add("config", cdi.CDI_CONFIG_NAME))
        if watch_snapshot_classes:
            on(VOLUME_SNAPSHOT_CLASSES, lambda _: self._all_profiles())
        if self._uploads:
            on(SERVICES, lambda service: self._add("upload", claim_key_of_pod(service)))

    def _on(self, resource: Any, handler: Callable[[JSON], None]) -> None:
        self.factory.informer(resource).add_event_handler(
            on_add=handler, on_update=lambda _old, new: handler(new), on_delete=handler
        )

    def _add(self, queue: str, key: str | None) -> None:
        if key and queue in self.queues:
            self.queues[queue].add(key)

    def _claim_changed(self, pvc: JSON) -> None:
        self._add("import", key_of(pvc))
        self._add("upload", key_of(pvc))
        self._add("clone", key_of(pvc))
        self._add("datavolume", data_volume_key_of_claim(pvc))

    def _pod_changed(self, pod: JSON) -> None:
        target_key = target_key_of_source_pod(pod)
        if target_key is not None:
            self._add("clone", target_key)
            return
        claim_key = claim_key_of_pod(pod)
        if claim_key is None:
            return
        self._add("upload" if is_upload_pod(pod) else "import", claim_key)
        claim = self.caches.pvcs.get_by_key(claim_key)
        if claim is not None:
            self._add("datavolume", data_volume_key_of_claim(claim))

    def _class_changed(self, storage_class: JSON) -> None:
        self._add("storageprofile", meta.name(storage_class))
        self._add("config", cdi.CDI_CONFIG_NAME)
        self._claimless_data_volumes()

    def _profile_changed(self, profile: JSON) -> None:
        self._add("storageprofile", meta.name(profile))
        self._claimless_data_volumes()

    def _claimless_data_volumes(self) -> None:
        # A DataVolume whose claim could not be rendered waits for a class or a profile.
        for dv in self.caches.data_volumes.list():
            if (dv.get("status") or {}).get("phase", "") in ("", "Pending"):
                self._add("datavolume", key_of(dv))

    def _all_profiles(self) -> None:
        for storage_class in self.caches.storage_classes.list():
            self._add("storageprofile", meta.name(storage_class))

    def run(self, stop: threading.Event) -> bool:
        """Starts the informers, waits for their caches, runs the controllers until ``stop``; False when
        the caches did not sync in time."""
        self.factory.start()
        if not self.factory.wait_for_cache_sync(self._options.cache_sync_timeout):
            return False
        self.synced.set()
        self._add("config", cdi.CDI_CONFIG_NAME)
        threads = [
            threading.Thread(
                target=Controller(name, self.queues[name], reconciler, self._options.threads).run,
                args=(stop,),
                name=f"controller-{name}",
                daemon=True,
            )
            for name, reconciler in self.reconcilers.items()
        ]
        for thread in threads:
            thread.start()
        get_logger().info("controllers running", controllers=sorted(self.reconcilers))
        stop.wait()
        for thread in threads:
            thread.join(timeout=10)
        return True

    def stop(self) -> None:
        self.factory.stop()
        self.events.stop()


def snapshot_classes_served(api: KubeApi) -> bool:
    try:
        api.get(CUSTOM_RESOURCE_DEFINITIONS, None, SNAPSHOT_CLASS_CRD)
    except NotFoundError:
        return False
    return True


def run(options: Options) -> int:
    """Runs until SIGTERM or SIGINT (0); 1 when the caches do not sync or the lease is lost."""
    log = get_logger()
    api = cluster_client(options.kubeconfig, COMPONENT)
    if api is None:
        return EXIT_CANNOT_START
    namespace = install_namespace(options.namespace)
    if not options.uploadserver_image:
        log.warning("no upload server image: DataVolumes with an upload source are not served")
    controllers = Controllers(api, options, watch_snapshot_classes=snapshot_classes_served(api))
    stop, failed = threading.Event(), threading.Event()
    try:
        health = HealthServer(options.health_address, options.health_port, controllers.synced.is_set)
    except OSError as err:
        log.error("cdi-controller cannot serve its probes", reason=str(err))
        return EXIT_CANNOT_START

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        log.info("stopping", signal=signal.Signals(signum).name)
        stop.set()

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, on_signal)
    health.start()

    def lead() -> None:
        if not controllers.run(stop):
            log.error("the caches did not sync")
            failed.set()
            stop.set()

    def lost() -> None:
        if not stop.is_set():
            log.error("lost the leader lease")
            failed.set()
            stop.set()

    try:
        if options.leader_elect:
            elector = LeaderElector(
                api,
                namespace=namespace,
                name=LEASE_NAME,
                identity=socket.gethostname(),
                on_started_leading=lambda: threading.Thread(target=lead, name="lead", daemon=True).start(),
                on_stopped_leading=lost,
            )
            threading.Thread(target=elector.run, args=(stop,), name="leader-election", daemon=True).start()
            stop.wait()
        else:
            lead()
    finally:
        controllers.stop()
        health.stop()
    return EXIT_FAILED if failed.is_set() else 0
