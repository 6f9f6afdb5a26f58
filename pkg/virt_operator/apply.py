"""Creating, repairing and removing the installed objects against the operator's caches.

An object whose cached copy does not contain everything the strategy says is patched back (JSON merge
patch of the desired object: lists such as containers are replaced whole, fields the API server or
other controllers add are left alone). Writes never carry a resourceVersion, so they cannot conflict;
a cache that lags behind a create is met with AlreadyExists and answered with a patch.

Objects the operator owns whole (the common instance types and preferences) are written ``whole``: their
labels, annotations and spec are made exactly the desired ones, as KubeVirt's operator replaces them, so
a field a user added to a bundled instance type is taken away again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from typing import Any, Protocol

from kubevirt.client import JSON, AlreadyExistsError, KubeApi, NotFoundError, Resource
from kubevirt.controller import key_for
from kubevirt.log import get_logger
from kubevirt.virt_operator.resource.metadata import is_managed
from kubevirt.virt_operator.resources import MANAGED, resource_of

_log = get_logger()
CONCURRENCY = 8
# Objects of a later stage are written once every object of the earlier ones is: CRDs, namespaces and
# the certificates first, the workloads (which need all of it) last; everything else in between.
_STAGES = {
    "CustomResourceDefinition": 0,
    "Namespace": 0,
    "Secret": 0,
    "ConfigMap": 0,
    "Deployment": 2,
    "DaemonSet": 2,
}


class Cache(Protocol):
    """What the applier reads of an informer's store."""

    def get_by_key(self, key: str) -> JSON | None: ...

    def list(self) -> list[JSON]: ...


CacheLookup = Callable[[Resource], Cache]


class CacheUnion:
    """The caches of one resource in several namespaces (one informer each), read as one."""

    def __init__(self, caches: Sequence[Cache]) -> None:
        self._caches = tuple(caches)

    def get_by_key(self, key: str) -> JSON | None:
        for cache in self._caches:
            found = cache.get_by_key(key)
            if found is not None:
                return found
        return None

    def list(self) -> list[JSON]:
        return [obj for cache in self._caches for obj in cache.list()]


def _never(_obj: JSON) -> bool:
    return False


# Maps of a pod template the strategy owns whole: a key it no longer sets (a nodePlacement removed from
# the CR, say) must be nulled, since a merge patch keeps every key it does not mention.
_OWNED_POD_MAPS = ("nodeSelector", "affinity")


def contains(current: Any, desired: Any) -> bool:
    """Whether ``current`` holds all ``desired`` says (maps may hold more; lists match item by item)."""
    if isinstance(desired, dict):
        return isinstance(current, dict) and all(contains(current.get(k), v) for k, v in desired.items())
    if isinstance(desired, list):
        return (
            isinstance(current, list)
            and len(current) == len(desired)
            and all(contains(c, d) for c, d in zip(current, desired, strict=True))
        )
    if isinstance(desired, bool) or isinstance(current, bool):
        return current is desired
    if isinstance(desired, int | float) and isinstance(current, int | float):
        return current == desired
    return bool(current == desired)


def _pod_spec(obj: JSON) -> Any:
    return ((obj.get("spec") or {}).get("template") or {}).get("spec")


def removed_keys(current: JSON, desired: JSON) -> JSON:
    """The merge patch nulling what ``current``'s pod template holds in an owned map and ``desired``
    does not; {} when there is nothing to remove."""
    have_pod, want_pod = _pod_spec(current), _pod_spec(desired)
    if not isinstance(have_pod, dict) or not isinstance(want_pod, dict):
        return {}
    nulls: JSON = {}
    for name in _OWNED_POD_MAPS:
        have, want = have_pod.get(name), want_pod.get(name)
        if not isinstance(have, dict):
            continue
        if want is None:
            nulls[name] = None
        elif isinstance(want, dict):
            gone = {key: None for key in have if key not in want}
            if gone:
                nulls[name] = gone
    return {"spec": {"template": {"spec": nulls}}} if nulls else {}


def _merged(body: JSON, extra: JSON) -> JSON:
    merged = dict(body)
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _merged(merged[key], value)
        else:
            merged[key] = value
    return merged


def _identity(obj: JSON) -> tuple[str | None, str]:
    metadata = obj["metadata"]
    return metadata.get("namespace"), metadata["name"]


_OWNED_WHOLE = (("metadata", "labels"), ("metadata", "annotations"), ("spec",))


def _owned_whole(obj: JSON) -> list[Any]:
    values = []
    for path in _OWNED_WHOLE:
        value: Any = obj
        for key in path:
            value = (value or {}).get(key)
        values.append(value or {})
    return values


def _replace_owned(desired: JSON) -> list[JSON]:
    """A JSON patch setting the wholly owned fields (``add`` replaces a member that exists)."""
    return [
        {"op": "add", "path": "/" + "/".join(path), "value": value}
        for path, value in zip(_OWNED_WHOLE, _owned_whole(desired), strict=True)
    ]


class Applier:
    def __init__(self, api: KubeApi, caches: CacheLookup, *, concurrency: int = CONCURRENCY) -> None:
        self._api = api
        self._caches = caches
        self._pool = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="virt-operator-apply")

    def cached(self, obj: JSON) -> JSON | None:
        namespace, name = _identity(obj)
        return self._caches(resource_of(obj)).get_by_key(key_for(namespace, name))

    def apply(self, desired: JSON, *, whole: bool = False) -> bool:
        """Makes the object as ``desired`` says (exactly, for its labels, annotations and spec, when
        ``whole``); True when it had to write."""
        resource = resource_of(desired)
        namespace, name = _identity(desired)
        current = self.cached(desired)
        if current is None:
            try:
                self._api.create(resource, namespace, desired)
                _log.info("created", kind=resource.kind, namespace=namespace, name=name)
                return True
            except AlreadyExistsError:
                current = self._api.get(resource, namespace, name)
        if whole:
            if _owned_whole(current) == _owned_whole(desired):
                return False
            self._api.patch(resource, namespace, name, _replace_owned(desired), patch_type="json")
            _log.info("replaced", kind=resource.kind, namespace=namespace, name=name)
            return True
        removed = removed_keys(current, desired)
        if contains(current, desired) and not removed:
            return False
        body = {key: value for key, value in desired.items() if key not in ("apiVersion", "kind")}
        body = _merged(body, removed)
        self._api.patch(resource, namespace, name, body, patch_type="merge")
        _log.info("restored", kind=resource.kind, namespace=namespace, name=name)
        return True

    def apply_all(self, objects: Iterable[JSON], *, whole: bool = False) -> int:
        """Applies the objects stage by stage (API types, then who may do what, then what serves), each
        stage's objects concurrently: an install is dozens of independent writes. Returns how many
        were written; the first failure is raised once its stage is done."""
        stages: dict[int, list[JSON]] = {}
        for obj in objects:
            stages.setdefault(_STAGES.get(obj.get("kind", ""), 1), []).append(obj)
        written = 0
        for stage in sorted(stages):
            futures = [self._pool.submit(self.apply, obj, whole=whole) for obj in stages[stage]]
            wait(futures)
            for future in futures:
                written += future.result()
        return written

    def managed(self, resources: Iterable[Resource] = MANAGED) -> list[JSON]:
        """Every cached object of ``resources`` carrying the operator's managed-by label."""
        return [obj for resource in resources for obj in self._caches(resource).list() if is_managed(obj)]

    def delete(self, obj: JSON) -> None:
        namespace, name = _identity(obj)
        resource = resource_of(obj)
        try:
            self._api.delete(resource, namespace, name, propagation_policy="Background")
            _log.info("deleted", kind=resource.kind, namespace=namespace, name=name)
        except NotFoundError:
            pass

    def delete_stale(
        self,
        desired: Iterable[JSON],
        resources: Iterable[Resource] = MANAGED,
        *,
        keep: Callable[[JSON], bool] = _never,
    ) -> int:
        """Deletes managed objects of ``resources`` the strategy no longer has (e.g. a budget for a
        single replica), but those ``keep`` says outlive it."""
        wanted = {(obj["kind"], *_identity(obj)) for obj in desired}
        stale = [
            obj
            for obj in self.managed(resources)
            if (obj["kind"], *_identity(obj)) not in wanted and not keep(obj)
        ]
        for obj in stale:
            self.delete(obj)
        return len(stale)

    def delete_all(self, *, keep: Callable[[JSON], bool] = _never) -> int:
        """Deletes every managed object but those ``keep`` says outlive the install, in uninstall order;
        returns how many were still there.

        The CRDs go first and everything else only once they are gone, as KubeVirt's operator does:
        deleting a CRD deletes its objects, and VMIs and VMs carry finalizers that only virt-controller
        and virt-handler remove, so those must still run until the last object is gone."""
        remaining = [obj for obj in self.managed() if not keep(obj)]
        crds = [obj for obj in remaining if obj["kind"] == "CustomResourceDefinition"]
        for obj in crds or remaining:
            if not (obj.get("metadata") or {}).get("deletionTimestamp"):
                self.delete(obj)
        return len(remaining)
