"""An in-memory cluster for the cdi-controller's unit tests: the fake API, caches refreshed from it on
``sync()`` (as informers would, when the test chooses), recorded events, and objects to start from."""

from __future__ import annotations

import copy
import datetime
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from kubevirt.cdi.resources import STORAGE_PROFILES
from kubevirt.cdi_controller.caches import Caches
from kubevirt.cdi_controller.clone import CloneController
from kubevirt.cdi_controller.clonetoken import SigningKey
from kubevirt.cdi_controller.config import ConfigController
from kubevirt.cdi_controller.datavolume import DataVolumeController
from kubevirt.cdi_controller.importer import ImportController
from kubevirt.cdi_controller.importerpod import ImporterSettings
from kubevirt.cdi_controller.storageprofile import StorageProfileController
from kubevirt.cdi_controller.upload import UploadController
from kubevirt.cdi_controller.uploadcerts import ServerCertIssuer
from kubevirt.cdi_controller.uploadpod import UploadSettings
from kubevirt.client import PERSISTENT_VOLUME_CLAIMS, PODS
from kubevirt.client.resources import CDI_CONFIGS, CDIS, DATA_VOLUMES, SERVICES, STORAGE_CLASSES, Resource
from kubevirt.controller import RequeueAfter
from kubevirt_testing import fake_kube_api
from kubevirt_testing.events import RecordedEvents
from kubevirt_testing.fake_kube_api import FakeKubeApi

JSON = dict[str, Any]
NS = "default"
IMAGE = "registry.example/cdi-importer:v1"
UPLOAD_IMAGE = "registry.example/cdi-uploadserver:v1"
CLONER_IMAGE = "registry.example/cdi-cloner:v1"
CDI_NS = "cdi"
# The moment upload server certificates are issued at.
CERT_TIME = datetime.datetime(2026, 1, 1, 12, 0, 0, tzinfo=datetime.UTC)
NOW = "2026-01-01T12:00:00Z"
RESOURCES = {
    "data_volumes": DATA_VOLUMES,
    "pvcs": PERSISTENT_VOLUME_CLAIMS,
    "pods": PODS,
    "storage_classes": STORAGE_CLASSES,
    "storage_profiles": STORAGE_PROFILES,
    "cdi_configs": CDI_CONFIGS,
    "cdis": CDIS,
    "services": SERVICES,
}
# CDI's cluster-wide kinds have no status subresource: an update writes their status.
_WITHOUT_STATUS = frozenset({"cdiconfigs", "cdis", "storageprofiles"})


@contextmanager
def cdi_status_rules() -> Iterator[None]:
    saved = fake_kube_api._WITHOUT_STATUS_SUBRESOURCE
    fake_kube_api._WITHOUT_STATUS_SUBRESOURCE = saved | _WITHOUT_STATUS
    try:
        yield
    finally:
        fake_kube_api._WITHOUT_STATUS_SUBRESOURCE = saved


class Clock:
    def __init__(self) -> None:
        self.ticks = 0

    def __call__(self) -> str:
        return f"2026-01-01T12:00:{self.ticks:02d}Z"

    def advance(self) -> None:
        self.ticks += 1


@dataclass
class Cluster:
    api: FakeKubeApi = field(default_factory=FakeKubeApi)
    caches: Caches = field(default_factory=Caches)
    events: RecordedEvents = field(default_factory=RecordedEvents)
    clock: Clock = field(default_factory=Clock)
    metrics: dict[str, str] = field(default_factory=dict)  # url -> body

    def __post_init__(self) -> None:
        self.signing_key = SigningKey(self.api, CDI_NS)
        self.datavolumes = DataVolumeController(
            api=self.api,
            events=self.events,
            caches=self.caches,
            fetch_metrics=self.metrics.get,
            signing_key=self.signing_key,
            now=self.clock,
        )
        self.importer = ImportController(
            api=self.api, events=self.events, caches=self.caches, settings=ImporterSettings(image=IMAGE)
        )
        self.uploads = UploadController(
            api=self.api,
            events=self.events,
            caches=self.caches,
            settings=UploadSettings(image=UPLOAD_IMAGE),
            issuer=ServerCertIssuer(self.api, CDI_NS, now=lambda: CERT_TIME),
        )
        self.clones = CloneController(
            api=self.api,
            events=self.events,
            caches=self.caches,
            settings=UploadSettings(image=CLONER_IMAGE),
            issuer=ServerCertIssuer(self.api, CDI_NS, now=lambda: CERT_TIME),
            signing_key=self.signing_key,
        )
        self.config = ConfigController(api=self.api, events=self.events, caches=self.caches)
        self.profiles = StorageProfileController(api=self.api, caches=self.caches)

    def sync(self) -> None:
        for (plural, _, _), obj in self.api.objects.items():
            if plural == "persistentvolumeclaims" and not obj.get("status"):
                obj["status"] = {"phase": "Pending"}  # as the API server creates claims
        for attribute, resource in RESOURCES.items():
            getattr(self.caches, attribute).replace(self.api.objects_of(resource))

    def add(self, resource: Resource, obj: JSON) -> JSON:
        created = self.api.add(resource, obj)
        self.sync()
        return created

    def get(self, resource: Resource, name: str, namespace: str | None = NS) -> JSON:
        return self.api.get(resource, namespace if resource.namespaced else None, name)

    def edit(self, resource: Resource, name: str, change: Callable[[JSON], None]) -> JSON:
        """Changes an object as another actor would (the kubelet, the PV controller), status included."""
        namespace = NS if resource.namespaced else None
        key = (resource.plural, namespace, name)
        obj = copy.deepcopy(self.api.objects[key])
        change(obj)
        self.api.objects[key] = obj
        obj["metadata"]["resourceVersion"] = str(int(obj["metadata"]["resourceVersion"]) + 1000)
        self.sync()
        return obj

    def reconcile_dv(self, name: str) -> float | None:
        return _requeue(lambda: self.datavolumes.reconcile(f"{NS}/{name}"))

    def reconcile_import(self, name: str) -> float | None:
        return _requeue(lambda: self.importer.reconcile(f"{NS}/{name}"))

    def reconcile_upload(self, name: str) -> float | None:
        return _requeue(lambda: self.uploads.reconcile(f"{NS}/{name}"))

    def reconcile_clone(self, name: str, namespace: str = NS) -> float | None:
        return _requeue(lambda: self.clones.reconcile(f"{namespace}/{name}"))

    def settle(self, name: str, rounds: int = 6) -> None:
        """Runs the claim controllers on ``name`` until nothing more happens (with the cache caught up)."""
        for _ in range(rounds):
            self.sync()
            self.reconcile_dv(name)
            self.sync()
            self.reconcile_import(name)
            self.sync()
            self.reconcile_upload(name)
            self.sync()
            self.reconcile_clone(name)
        self.sync()

    def warnings(self) -> list[tuple[str, str]]:
        return [(reason, message) for kind, reason, message in self.events.seen if kind == "Warning"]

    def reasons(self) -> list[str]:
        return [reason for _, reason, _ in self.events.seen]


def _requeue(call: Callable[[], None]) -> float | None:
    try:
        call()
    except RequeueAfter as request:
        return request.seconds
    return None


def storage_class(name: str = "local", *, wffc: bool = False, default: bool = True, **extra: Any) -> JSON:
    annotations = {"storageclass.kubernetes.io/is-default-class": "true"} if default else {}
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": name, "annotations": annotations},
        "provisioner": extra.pop("provisioner", "hostpath.csi.kubevirt-py.io"),
        "volumeBindingMode": "WaitForFirstConsumer" if wffc else "Immediate",
        **extra,
    }


def profile(class_name: str = "local", sets: list[JSON] | None = None) -> JSON:
    cps = [{"accessModes": ["ReadWriteOnce"], "volumeMode": "Filesystem"}] if sets is None else sets
    return {
        "apiVersion": "cdi.kubevirt.io/v1beta1",
        "kind": "StorageProfile",
        "metadata": {"name": class_name},
        "spec": {},
        "status": {"storageClass": class_name, "claimPropertySets": cps},
    }


def cdi_config(overhead: str = "0.06", per_class: dict[str, str] | None = None, **spec: Any) -> JSON:
    return {
        "apiVersion": "cdi.kubevirt.io/v1beta1",
        "kind": "CDIConfig",
        "metadata": {"name": "config"},
        "spec": spec,
        "status": {
            "filesystemOverhead": {"global": overhead, "storageClass": per_class or {}},
            "defaultPodResourceRequirements": {"limits": {"cpu": "750m", "memory": "600M"}},
        },
    }


def data_volume(
    name: str = "dv", *, source: JSON | None = None, storage: JSON | None = None, **extra: Any
) -> JSON:
    spec: JSON = {
        "source": source if source is not None else {"http": {"url": "https://images.example/disk.qcow2"}}
    }
    spec["storage"] = storage if storage is not None else {"resources": {"requests": {"storage": "1Gi"}}}
    spec.update(extra.pop("spec", {}))
    return {
        "apiVersion": "cdi.kubevirt.io/v1beta1",
        "kind": "DataVolume",
        "metadata": {"name": name, "namespace": NS, **extra},
        "spec": spec,
    }


def standard_cluster(*, wffc: bool = False, **config: Any) -> Cluster:
    cluster = Cluster()
    cluster.add(STORAGE_CLASSES, storage_class(wffc=wffc))
    cluster.add(STORAGE_PROFILES, profile())
    cluster.add(CDI_CONFIGS, cdi_config(**config))
    return cluster


def set_claim_phase(cluster: Cluster, name: str, phase: str) -> None:
    cluster.edit(PERSISTENT_VOLUME_CLAIMS, name, lambda pvc: pvc.__setitem__("status", {"phase": phase}))


def set_pod_status(cluster: Cluster, name: str, status: JSON) -> None:
    cluster.edit(PODS, name, lambda pod: pod.__setitem__("status", status))


def running(ip: str = "10.0.0.7", restarts: int = 0) -> JSON:
    return {
        "phase": "Running",
        "podIP": ip,
        "containerStatuses": [{"name": "importer", "restartCount": restarts, "state": {"running": {}}}],
    }


def terminated(exit_code: int, message: str, phase: str = "Succeeded", reason: str = "Completed") -> JSON:
    state = {"terminated": {"exitCode": exit_code, "message": message, "reason": reason}}
    return {"phase": phase, "containerStatuses": [{"name": "importer", "restartCount": 0, "state": state}]}
