"""An in-memory Kubernetes API for unit tests of reconcilers, leader election and the event recorder.

It keeps the rules a reconciler depends on: resourceVersions that change on every write, updates and
uid preconditions that fail with ConflictError when stale, AlreadyExistsError on a taken name,
``generateName``, label-selector lists, and merge and JSON patches. It records every write as
``(verb, plural, namespace, name)`` so tests can count API calls. It runs no admission, defaulting or
garbage collection.
"""

from __future__ import annotations

import copy
import itertools
import threading
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from kubevirt.client.errors import AlreadyExistsError, ApiError, ConflictError, InvalidError, NotFoundError
from kubevirt.client.protocols import JSON, KubeApi
from kubevirt.client.resources import Resource

__all__ = ["FakeKubeApi", "apply_json_patch", "apply_merge_patch", "matches_label_selector"]

_Key = tuple[str, str | None, str]
_Items = list[JSON]
_Patch = list[Any] | dict[str, Any]
# Kinds whose CRD has no status subresource: an update writes their status too (as the apiserver does).
_WITHOUT_STATUS_SUBRESOURCE = frozenset({"virtualmachineinstances", "virtualmachineinstancepresets"})


class FakeKubeApi:
    def __init__(self) -> None:
        self.objects: dict[_Key, JSON] = {}
        self.writes: list[tuple[str, str, str | None, str]] = []
        # Set to an ApiError to make every following call fail with it (e.g. the server is down).
        self.fail_with: ApiError | None = None
        self._versions = itertools.count(1)
        self._lock = threading.RLock()

    # Test helpers.

    def add(self, resource: Resource, obj: Mapping[str, Any]) -> JSON:
        """Stores an object as if created by someone else (not counted as a write)."""
        created = self.create(resource, (obj.get("metadata") or {}).get("namespace"), obj)
        self.writes.pop()
        return created

    def objects_of(self, resource: Resource) -> _Items:
        with self._lock:
            return [
                copy.deepcopy(obj)
                for (plural, _, _), obj in self.objects.items()
                if plural == resource.plural
            ]

    # KubeApi.

    def get(self, resource: Resource, namespace: str | None, name: str) -> JSON:
        with self._lock:
            return copy.deepcopy(self._current(resource, namespace, name))

    def list(
        self,
        resource: Resource,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> tuple[_Items, str]:
        if field_selector:
            raise InvalidError(422, "Invalid", "field selectors are not supported by the fake API")
        with self._lock:
            self._maybe_fail()
            items = [
                copy.deepcopy(obj)
                for (plural, ns, _), obj in self.objects.items()
                if plural == resource.plural
                and (namespace is None or ns == namespace)
                and matches_label_selector(obj, label_selector)
            ]
            return items, str(next(self._versions))

    def create(
        self, resource: Resource, namespace: str | None, body: Mapping[str, Any], *, dry_run: bool = False
    ) -> JSON:
        """With ``dry_run`` the object is checked and returned but neither stored nor counted."""
        with self._lock:
            self._maybe_fail()
            obj = copy.deepcopy(dict(body))
            meta = obj.setdefault("metadata", {})
            if not meta.get("name"):
                if not meta.get("generateName"):
                    raise InvalidError(422, "Invalid", "metadata.name: Required value")
                meta["name"] = meta["generateName"] + uuid.uuid4().hex[:5]
            key = (resource.plural, namespace, meta["name"])
            if key in self.objects:
                raise AlreadyExistsError(
                    409, "AlreadyExists", f'{resource.plural} "{meta["name"]}" already exists'
                )
            if namespace is not None:
                meta["namespace"] = namespace
            meta["uid"] = str(uuid.uuid4())
            meta["creationTimestamp"] = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            obj.setdefault("apiVersion", resource.api_version)
            obj.setdefault("kind", resource.kind)
            if dry_run:
                return obj
            return self._store("create", key, obj)

    def update(self, resource: Resource, namespace: str | None, body: Mapping[str, Any]) -> JSON:
        return self._replace("update", resource, namespace, body)

    def update_status(self, resource: Resource, namespace: str | None, body: Mapping[str, Any]) -> JSON:
        return self._replace("update_status", resource, namespace, body)

    def patch(
        self,
        resource: Resource,
        namespace: str | None,
        name: str,
        patch: _Patch,
        *,
        patch_type: str = "json",
        subresource: str | None = None,
        dry_run: bool = False,
    ) -> JSON:
        """With ``dry_run`` the patch is applied to a copy (its failures raise) and nothing is stored."""
        with self._lock:
            current = copy.deepcopy(self._current(resource, namespace, name))
            if patch_type == "json":
                if not isinstance(patch, list):
                    raise InvalidError(422, "Invalid", "a JSON patch is a list of operations")
                patched = apply_json_patch(current, patch)
            elif isinstance(patch, dict):  # merge; strategic merge is treated as a merge patch here
                patched = apply_merge_patch(current, patch)
            else:
                raise InvalidError(422, "Invalid", "a merge patch is an object")
            wanted = (patch.get("metadata") or {}).get("resourceVersion") if isinstance(patch, dict) else None
            if wanted is not None and wanted != current["metadata"]["resourceVersion"]:
                raise ConflictError(409, "Conflict", "the object has been modified")
            if dry_run:
                return patched
            verb = f"patch_{subresource}" if subresource else "patch"
            return self._store(verb, (resource.plural, namespace, name), patched)

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
        with self._lock:
            current = self._current(resource, namespace, name)
            if uid is not None and current["metadata"].get("uid") != uid:
                raise ConflictError(409, "Conflict", "Precondition failed: UID in precondition")
            del self.objects[(resource.plural, namespace, name)]
            self.writes.append(("delete", resource.plural, namespace, name))

    # Internals.

    def _maybe_fail(self) -> None:
        if self.fail_with is not None:
            raise self.fail_with

    def _current(self, resource: Resource, namespace: str | None, name: str) -> JSON:
        self._maybe_fail()
        found = self.objects.get((resource.plural, namespace, name))
        if found is None:
            raise NotFoundError(404, "NotFound", f'{resource.plural} "{name}" not found')
        return found

    def _replace(self, verb: str, resource: Resource, namespace: str | None, body: Mapping[str, Any]) -> JSON:
        with self._lock:
            obj = copy.deepcopy(dict(body))
            meta = obj.get("metadata") or {}
            current = self._current(resource, namespace, str(meta.get("name")))
            if meta.get("resourceVersion") != current["metadata"]["resourceVersion"]:
                raise ConflictError(409, "Conflict", "the object has been modified")
            if verb == "update_status":  # only the status changes through the status subresource
                obj = {**copy.deepcopy(current), "status": obj.get("status")}
            elif resource.plural in _WITHOUT_STATUS_SUBRESOURCE:
                pass  # no status subresource: the body's status is the new one
            elif "status" in current:
                obj["status"] = copy.deepcopy(current["status"])
            for field in ("uid", "creationTimestamp", "namespace"):
                if field in current["metadata"]:
                    obj["metadata"][field] = current["metadata"][field]
            return self._store(verb, (resource.plural, namespace, meta["name"]), obj)

    def _store(self, verb: str, key: _Key, obj: JSON) -> JSON:
        obj["metadata"]["resourceVersion"] = str(next(self._versions))
        self.objects[key] = obj
        self.writes.append((verb, key[0], key[1], key[2]))
        return copy.deepcopy(obj)


def matches_label_selector(obj: Mapping[str, Any], selector: str | None) -> bool:
    """Equality (``k=v``, ``k==v``, ``k!=v``), set (``k in (a,b)``, ``k notin (a)``) and existence terms."""
    if not selector:
        return True
    labels = (obj.get("metadata") or {}).get("labels") or {}
    for term in _split_terms(selector):
        term = term.strip()
        if " notin " in term or " in " in term:
            negate = " notin " in term
            key, values = term.split(" notin " if negate else " in ", 1)
            allowed = {value.strip() for value in values.strip().strip("()").split(",")}
            found = labels.get(key.strip()) in allowed
            if found == negate:
                return False
        elif "!=" in term:
            key, value = term.split("!=", 1)
            if labels.get(key.strip()) == value.strip():
                return False
        elif "=" in term:
            key, value = term.replace("==", "=").split("=", 1)
            if labels.get(key.strip()) != value.strip():
                return False
        elif term.startswith("!"):
            if term[1:].strip() in labels:
                return False
        elif term not in labels:
            return False
    return True


def _split_terms(selector: str) -> list[str]:
    terms, depth, current = [], 0, ""
    for char in selector:
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "," and depth == 0:
            terms.append(current)
            current = ""
        else:
            current += char
    return [*terms, current]


def apply_merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: objects merge recursively, null removes, anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = apply_merge_patch(result.get(key), value)
    return result


def apply_json_patch(document: JSON, operations: list[Any]) -> JSON:
    """RFC 6902 ``add``, ``replace``, ``remove`` and ``test``; a failed test is a 422 as the server says."""
    result = copy.deepcopy(document)
    for operation in operations:
        op, path = operation["op"], operation["path"]
        parent, last = _resolve(result, path)
        if op == "test":
            current = parent[int(last)] if isinstance(parent, list) else parent.get(last)
            if current != operation.get("value"):
                raise InvalidError(422, "Invalid", f"the server rejected our request: test failed at {path}")
        elif op == "remove":
            if isinstance(parent, list):
                del parent[int(last)]
            else:
                parent.pop(last)
        elif op in ("add", "replace"):
            value = copy.deepcopy(operation["value"])
            if isinstance(parent, list):
                if last == "-":
                    parent.append(value)
                elif op == "add":
                    parent.insert(int(last), value)
                else:
                    parent[int(last)] = value
            else:
                parent[last] = value
        else:
            raise InvalidError(422, "Invalid", f"unsupported JSON patch operation {op!r}")
    return result


def _resolve(document: Any, path: str) -> tuple[Any, str]:
    parts = [part.replace("~1", "/").replace("~0", "~") for part in path.split("/")[1:]]
    current = document
    try:
        for part in parts[:-1]:
            current = current[int(part)] if isinstance(current, list) else current[part]
    except (KeyError, IndexError, ValueError):
        raise InvalidError(422, "Invalid", f"the path {path} does not exist") from None
    return current, parts[-1]


def _is_a_kube_api(api: FakeKubeApi) -> KubeApi:
    return api  # mypy checks here that the fake keeps to the KubeApi Protocol
