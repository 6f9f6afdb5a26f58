"""An in-memory API server and informers for the controllers' unit tests.

``FakeApi`` implements ``KubeApi`` with the semantics the controllers depend on: resourceVersion
preconditions (409 Conflict), uid and generation assignment, ``generateName``, status subresources,
finalizers holding a deletion, uid preconditions on delete, JSON/merge/strategic patches, admission
hooks, and a log of every write. ``Cluster`` feeds informer stores from it and calls the handlers, as
the real shared informers do, once ``sync()`` is called (so tests choose when the cache catches up).
"""

from __future__ import annotations

import copy
import random
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Generic, TypeVar

from kubevirt.client import (
    NODES,
    PODS,
    VIRTUAL_MACHINE_INSTANCE_REPLICA_SETS,
    VIRTUAL_MACHINE_INSTANCES,
    VIRTUAL_MACHINE_POOLS,
    VIRTUAL_MACHINES,
    AlreadyExistsError,
    ConflictError,
    InvalidError,
    NotFoundError,
    Resource,
)
from kubevirt.client.resources import (
    CONTROLLER_REVISIONS,
    VIRTUAL_MACHINE_CLUSTER_INSTANCETYPES,
    VIRTUAL_MACHINE_CLUSTER_PREFERENCES,
    VIRTUAL_MACHINE_INSTANCETYPES,
    VIRTUAL_MACHINE_PREFERENCES,
)
from kubevirt.controller import Store, key_of
from kubevirt_api.core.v1 import VirtualMachine, VirtualMachineInstance, VirtualMachineInstanceReplicaSet
from kubevirt_api.instancetype.v1beta1 import (
    VirtualMachineClusterInstancetype,
    VirtualMachineClusterPreference,
    VirtualMachineInstancetype,
    VirtualMachinePreference,
)
from kubevirt_api.pool.v1alpha1 import VirtualMachinePool
from kubevirt_testing.fake_kube_api import apply_json_patch, apply_merge_patch

JSON = dict[str, Any]
T = TypeVar("T")

# Kinds whose status is only written through the status subresource.
_STATUS_SUBRESOURCE = {
    "virtualmachines",
    "virtualmachineinstancereplicasets",
    "virtualmachinepools",
    "virtualmachineinstancemigrations",
    "pods",
    "nodes",
}
# Kubernetes' alphabet for generateName suffixes (no vowels, no confusable digits).
_NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


class FakeClock:
    def __init__(self, start: datetime | None = None) -> None:
        self.now = start or datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


@dataclass
class WatchEvent:
    type: str  # ADDED, MODIFIED, DELETED
    plural: str
    obj: JSON


@dataclass
class FakeApi:
    """An API server in a dict. ``writes`` logs (verb, plural, subresource) of every accepted write."""

    clock: FakeClock = field(default_factory=FakeClock)
    objects: dict[tuple[str, str | None, str], JSON] = field(default_factory=dict)
    writes: list[tuple[str, str, str | None]] = field(default_factory=list)
    watch_events: list[WatchEvent] = field(default_factory=list)
    # Called on CREATE (after defaults) per plural: a mutator changes the object, a validator raises.
    admission: dict[str, Callable[[JSON], None]] = field(default_factory=dict)
    # Errors to raise on the next matching write: (verb, plural) → exception.
    fail_next: dict[tuple[str, str], Exception] = field(default_factory=dict)
    rng: random.Random = field(default_factory=lambda: random.Random(7))
    _version: int = 0

    # -- reads ---------------------------------------------------------------------------------------

    def get(self, resource: Resource, namespace: str | None, name: str) -> JSON:
        return copy.deepcopy(self._existing(resource, namespace, name))

    def list(
        self,
        resource: Resource,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> tuple[list[JSON], str]:
        items = [
            copy.deepcopy(obj)
            for (plural, ns, _), obj in sorted(self.objects.items())
            if plural == resource.plural and (namespace is None or ns == namespace)
        ]
        return items, str(self._version)

    # -- writes --------------------------------------------------------------------------------------

    def create(self, resource: Resource, namespace: str | None, body: Mapping[str, Any]) -> JSON:
        self._maybe_fail("create", resource)
        obj = copy.deepcopy(dict(body))
        meta = obj.setdefault("metadata", {})
        if not meta.get("name"):
            if not meta.get("generateName"):
                raise InvalidError(422, "Invalid", "metadata.name: Required value")
            meta["name"] = meta["generateName"] + "".join(self.rng.choice(_NAME_ALPHABET) for _ in range(5))
        if resource.namespaced:
            meta["namespace"] = namespace
        key = (resource.plural, namespace, meta["name"])
        if key in self.objects:
            raise AlreadyExistsError(
                409, "AlreadyExists", f'{resource.plural} "{meta["name"]}" already exists'
            )
        if resource.plural in _STATUS_SUBRESOURCE and resource.plural != "pods":
            obj.pop("status", None)
        hook = self.admission.get(resource.plural)
        if hook is not None:
            hook(obj)
        meta["uid"] = str(uuid.UUID(int=self.rng.getrandbits(128)))
        meta["generation"] = 1
        meta["creationTimestamp"] = self.clock().strftime("%Y-%m-%dT%H:%M:%SZ")
        meta.pop("deletionTimestamp", None)
        self._store(resource, key, obj, "ADDED", "create", None)
        return copy.deepcopy(obj)

    def update(self, resource: Resource, namespace: str | None, body: Mapping[str, Any]) -> JSON:
        self._maybe_fail("update", resource)
        new = copy.deepcopy(dict(body))
        key = (resource.plural, namespace, new["metadata"]["name"])
        old = self._existing(resource, namespace, new["metadata"]["name"])
        self._check_version(old, new)
        if resource.plural in _STATUS_SUBRESOURCE:
            new["status"] = copy.deepcopy(old.get("status"))
            if new["status"] is None:
                new.pop("status")
        return self._replace(resource, key, old, new, "update", None)

    def update_status(self, resource: Resource, namespace: str | None, body: Mapping[str, Any]) -> JSON:
        self._maybe_fail("update_status", resource)
        if resource.plural not in _STATUS_SUBRESOURCE:
            raise NotFoundError(404, "NotFound", "the server could not find the requested resource")
        key = (resource.plural, namespace, body["metadata"]["name"])
        old = self._existing(resource, namespace, body["metadata"]["name"])
        self._check_version(old, body)
        new = copy.deepcopy(old)
        new["status"] = copy.deepcopy(body.get("status"))
        return self._replace(resource, key, old, new, "update", "status")

    def patch(
        self,
        resource: Resource,
        namespace: str | None,
        name: str,
        patch: list[Any] | dict[str, Any],
        *,
        patch_type: str = "json",
        subresource: str | None = None,
    ) -> JSON:
        self._maybe_fail("patch", resource)
        key = (resource.plural, namespace, name)
        old = self._existing(resource, namespace, name)
        if patch_type == "json":
            assert isinstance(patch, list)
            new = apply_json_patch(old, patch)
        elif patch_type == "strategic":
            assert isinstance(patch, dict)
            new = _strategic_merge(old, patch)
        else:
            assert isinstance(patch, dict)
            new = apply_merge_patch(old, patch)
        if resource.plural in _STATUS_SUBRESOURCE:
            if subresource == "status":
                new = {**copy.deepcopy(old), "status": new.get("status")}
            else:
                new["status"] = copy.deepcopy(old.get("status"))
        new["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"]
        return self._replace(resource, key, old, new, "patch", subresource)

    def delete(
        self,
        resource: Resource,
        namespace: str | None,
        name: str,
        *,
        uid: str | None = None,
        grace_period_seconds: int | None = None,
        propagation_policy: str | None = None,
    ) -> None:
        self._maybe_fail("delete", resource)
        key = (resource.plural, namespace, name)
        old = self._existing(resource, namespace, name)
        if uid is not None and old["metadata"].get("uid") != uid:
            raise ConflictError(409, "Conflict", "Precondition failed: UID in precondition does not match")
        self.writes.append(("delete", resource.plural, None))
        if old["metadata"].get("finalizers"):
            if old["metadata"].get("deletionTimestamp"):
                return
            new = copy.deepcopy(old)
            new["metadata"]["deletionTimestamp"] = self.clock().strftime("%Y-%m-%dT%H:%M:%SZ")
            new["metadata"]["deletionGracePeriodSeconds"] = grace_period_seconds or 0
            self._bump(new)
            self.objects[key] = new
            self.watch_events.append(WatchEvent("MODIFIED", resource.plural, copy.deepcopy(new)))
            return
        self._remove(key)

    # -- helpers for tests ---------------------------------------------------------------------------

    def put(self, resource: Resource, obj: JSON) -> JSON:
        """Stores an object as another actor (a user, the scheduler, virt-handler) would write it."""
        meta = obj["metadata"]
        key = (resource.plural, meta.get("namespace") if resource.namespaced else None, meta["name"])
        old = self.objects.get(key)
        if old is None:
            obj = copy.deepcopy(obj)
            meta = obj["metadata"]
            meta.setdefault("uid", str(uuid.UUID(int=self.rng.getrandbits(128))))
            meta.setdefault("generation", 1)
            meta.setdefault("creationTimestamp", self.clock().strftime("%Y-%m-%dT%H:%M:%SZ"))
            self._bump(obj)
            self.objects[key] = obj
            self.watch_events.append(WatchEvent("ADDED", resource.plural, copy.deepcopy(obj)))
            return copy.deepcopy(obj)
        new = copy.deepcopy(obj)
        new["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"]
        return self._replace(resource, key, old, new, None, None)

    def edit(
        self, resource: Resource, namespace: str | None, name: str, change: Callable[[JSON], None]
    ) -> JSON:
        obj = self.get(resource, namespace, name)
        change(obj)
        return self.put(resource, obj)

    def remove(self, resource: Resource, namespace: str | None, name: str) -> None:
        """Makes an object vanish at once (a node that is gone, a pod the kubelet removed)."""
        self._remove((resource.plural, namespace, name))

    def find(self, resource: Resource, namespace: str | None = None) -> list[JSON]:
        return self.list(resource, namespace)[0]

    def count_writes(self, verb: str, resource: Resource, subresource: str | None = None) -> int:
        return sum(1 for w in self.writes if w == (verb, resource.plural, subresource))

    # -- internals -----------------------------------------------------------------------------------

    def _maybe_fail(self, verb: str, resource: Resource) -> None:
        err = self.fail_next.pop((verb, resource.plural), None)
        if err is not None:
            raise err

    def _existing(self, resource: Resource, namespace: str | None, name: str) -> JSON:
        obj = self.objects.get((resource.plural, namespace if resource.namespaced else None, name))
        if obj is None:
            raise NotFoundError(404, "NotFound", f'{resource.plural} "{name}" not found')
        return obj

    @staticmethod
    def _check_version(old: Mapping[str, Any], new: Mapping[str, Any]) -> None:
        wanted = new.get("metadata", {}).get("resourceVersion")
        if wanted and wanted != old["metadata"]["resourceVersion"]:
            raise ConflictError(
                409,
                "Conflict",
                "the object has been modified; please apply your changes to the latest version",
            )

    def _bump(self, obj: JSON) -> None:
        self._version += 1
        obj["metadata"]["resourceVersion"] = str(self._version)

    def _store(
        self,
        resource: Resource,
        key: tuple[str, str | None, str],
        obj: JSON,
        event: str,
        verb: str,
        subresource: str | None,
    ) -> None:
        self._bump(obj)
        self.objects[key] = obj
        self.writes.append((verb, resource.plural, subresource))
        self.watch_events.append(WatchEvent(event, resource.plural, copy.deepcopy(obj)))

    def _replace(
        self,
        resource: Resource,
        key: tuple[str, str | None, str],
        old: JSON,
        new: JSON,
        verb: str | None,
        subresource: str | None,
    ) -> JSON:
        for immutable in ("uid", "creationTimestamp", "deletionTimestamp", "namespace", "name"):
            if immutable in old["metadata"]:
                new["metadata"][immutable] = old["metadata"][immutable]
        new["metadata"]["generation"] = old["metadata"].get("generation", 1) + (
            1 if new.get("spec") != old.get("spec") else 0
        )
        if new == old:
            return copy.deepcopy(old)  # a no-op write keeps the resourceVersion, as the API server does
        if verb is not None:
            self.writes.append((verb, resource.plural, subresource))
        if new["metadata"].get("deletionTimestamp") and not new["metadata"].get("finalizers"):
            self._remove(key)
            return new
        self._bump(new)
        self.objects[key] = new
        self.watch_events.append(WatchEvent("MODIFIED", resource.plural, copy.deepcopy(new)))
        return copy.deepcopy(new)

    def _remove(self, key: tuple[str, str | None, str]) -> None:
        obj = self.objects.pop(key, None)
        if obj is not None:
            self.watch_events.append(WatchEvent("DELETED", key[0], copy.deepcopy(obj)))


def _strategic_merge(target: Any, patch: Any) -> Any:
    """A merge patch, except that ``conditions`` lists merge by ``type`` (as for a Pod's status)."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        elif key == "conditions" and isinstance(value, list):
            merged = {c["type"]: c for c in result.get(key) or []}
            for condition in value:
                merged[condition["type"]] = {**merged.get(condition["type"], {}), **condition}
            result[key] = list(merged.values())
        else:
            result[key] = _strategic_merge(result.get(key), value)
    return result


class FakeInformer(Generic[T]):
    """An informer's store and handlers; ``Cluster.sync`` delivers the API's changes to it."""

    def __init__(self, decode: Callable[[JSON], T]) -> None:
        self.store: Store[T] = Store()
        self.decode = decode
        self.handlers: list[tuple[Callable[[T], None], Callable[[T, T], None], Callable[[T], None]]] = []
        self.position = 0  # how many of the API's watch events this informer has seen

    def add_event_handler(
        self, on_add: Callable[[T], None], on_update: Callable[[T, T], None], on_delete: Callable[[T], None]
    ) -> None:
        self.handlers.append((on_add, on_update, on_delete))

    def deliver(self, event: WatchEvent) -> None:
        obj = self.decode(event.obj)
        if event.type == "DELETED":
            last = self.store.remove(key_of(obj))
            for _, _, on_delete in self.handlers:
                on_delete(last if last is not None else obj)
            return
        old = self.store.upsert(obj)
        for on_add, on_update, _ in self.handlers:
            if old is None:
                on_add(obj)
            else:
                on_update(old, obj)


def _same(obj: JSON) -> JSON:
    return obj


DECODERS: dict[str, Callable[[JSON], Any]] = {
    VIRTUAL_MACHINES.plural: VirtualMachine.from_dict,
    VIRTUAL_MACHINE_INSTANCES.plural: VirtualMachineInstance.from_dict,
    VIRTUAL_MACHINE_INSTANCE_REPLICA_SETS.plural: VirtualMachineInstanceReplicaSet.from_dict,
    VIRTUAL_MACHINE_POOLS.plural: VirtualMachinePool.from_dict,
    PODS.plural: _same,
    NODES.plural: _same,
    "virtualmachineinstancemigrations": _same,
    "poddisruptionbudgets": _same,
    "persistentvolumeclaims": _same,
    "datavolumes": _same,
    "migrationpolicies": _same,
    CONTROLLER_REVISIONS.plural: _same,
    VIRTUAL_MACHINE_INSTANCETYPES.plural: VirtualMachineInstancetype.from_dict,
    VIRTUAL_MACHINE_CLUSTER_INSTANCETYPES.plural: VirtualMachineClusterInstancetype.from_dict,
    VIRTUAL_MACHINE_PREFERENCES.plural: VirtualMachinePreference.from_dict,
    VIRTUAL_MACHINE_CLUSTER_PREFERENCES.plural: VirtualMachineClusterPreference.from_dict,
}


class Cluster:
    """One fake API server and a set of informers over it (replaced wholesale to simulate a restart)."""

    def __init__(self, api: FakeApi | None = None) -> None:
        self.api = api or FakeApi()
        self.informers: dict[str, FakeInformer[Any]] = {}

    def informer(self, resource: Resource) -> FakeInformer[Any]:
        if resource.plural not in self.informers:
            informer: FakeInformer[Any] = FakeInformer(DECODERS[resource.plural])
            for obj in self.api.find(resource):  # the initial list, as after a (re)start
                informer.store.upsert(informer.decode(obj))
            informer.position = len(self.api.watch_events)
            self.informers[resource.plural] = informer
        return self.informers[resource.plural]

    def restart(self) -> None:
        """New informers over the same API; they list what exists now and watch from there."""
        self.informers = {}

    def sync(self) -> None:
        """Lets every informer catch up with the API server."""
        progress = True
        while progress:
            progress = False
            for informer_plural, informer in list(self.informers.items()):
                while informer.position < len(self.api.watch_events):
                    event = self.api.watch_events[informer.position]
                    informer.position += 1
                    if event.plural == informer_plural:
                        informer.deliver(event)
                        progress = True


class FakeVMIVolumes:
    """virt-api's VMI ``addvolume``/``removevolume`` as the VM controller calls them: each call is
    recorded, then the VMI's spec changed as virt-api changes it (the volume, hotpluggable, and its disk
    added, or both removed). While ``fail`` is set, every call raises it instead."""

    def __init__(self, api: FakeApi) -> None:
        self.api = api
        self.calls: list[tuple[str, str | None, str, JSON]] = []
        self.fail: Exception | None = None

    def add_volume(self, namespace: str | None, name: str, options: Mapping[str, Any]) -> None:
        self._call("add", namespace, name, options)

        def add(vmi: JSON) -> None:
            source = copy.deepcopy(options["volumeSource"])
            for kind in source.values():
                kind["hotpluggable"] = True
            vmi["spec"].setdefault("volumes", []).append({"name": options["name"], **source})
            disk = {**copy.deepcopy(options["disk"]), "name": options["name"]}
            vmi["spec"]["domain"]["devices"].setdefault("disks", []).append(disk)

        self.api.edit(VIRTUAL_MACHINE_INSTANCES, namespace, name, add)

    def remove_volume(self, namespace: str | None, name: str, options: Mapping[str, Any]) -> None:
        self._call("remove", namespace, name, options)

        def remove(vmi: JSON) -> None:
            spec = vmi["spec"]
            spec["volumes"] = [v for v in spec.get("volumes") or [] if v["name"] != options["name"]]
            devices = spec["domain"]["devices"]
            devices["disks"] = [d for d in devices.get("disks") or [] if d["name"] != options["name"]]

        self.api.edit(VIRTUAL_MACHINE_INSTANCES, namespace, name, remove)

    def _call(self, action: str, namespace: str | None, name: str, options: Mapping[str, Any]) -> None:
        self.calls.append((action, namespace, name, copy.deepcopy(dict(options))))
        if self.fail is not None:
            raise self.fail


class FakeEvents:
    def __init__(self) -> None:
        self.recorded: list[tuple[str, str, str, str]] = []

    def event(self, obj: Any, event_type: str, reason: str, message: str) -> None:
        self.recorded.append((key_of(obj), event_type, reason, message))

    def reasons(self) -> list[str]:
        return [reason for _, _, reason, _ in self.recorded]


class RecordedEvents:
    """Events as (kind, name, type, reason, message) of the object they are about, in order."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, str, str, str]] = []

    def event(self, obj: Any, event_type: str, reason: str, message: str) -> None:
        self.events.append((obj.get("kind", ""), obj["metadata"]["name"], event_type, reason, message))

    def reasons(self) -> list[str]:
        return [reason for *_, reason, _ in self.events]


class FakeQueue:
    """Keys waiting to be reconciled, without timing: ``add_after`` keys are kept apart."""

    def __init__(self) -> None:
        self.keys: list[str] = []
        self.delayed: dict[str, float] = {}

    def add(self, key: str) -> None:
        if key not in self.keys:
            self.keys.append(key)

    def pop(self) -> str | None:
        return self.keys.pop(0) if self.keys else None
