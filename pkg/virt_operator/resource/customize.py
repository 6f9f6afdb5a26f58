"""``spec.customizeComponents.patches``: user patches applied on top of the generated objects, recorded
by a hash in ``kubevirt.io/customizer-identifier`` (KubeVirt's ``apply/patches.go``)."""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Sequence
from typing import Any

from kubevirt.admission import jsonpatch
from kubevirt.virt_operator.resource.config import InvalidInstallConfigError, Patch
from kubevirt_api.core.v1.constants import KUBE_VIRT_CUSTOMIZE_COMPONENT_ANNOTATION_HASH

JSON = dict[str, Any]
PATCH_TYPES = ("json", "merge", "strategic")


def customizer_hash(patches: Sequence[Patch]) -> str:
    body = json.dumps([[p.resource_name, p.resource_type, p.patch, p.type] for p in patches], sort_keys=True)
    return hashlib.sha1(body.encode()).hexdigest()[:16]


def _merge(target: Any, patch: Any, *, strategic: bool) -> Any:
    """RFC 7386 merge; ``strategic`` also merges lists of named objects by name, as Kubernetes does for
    containers, volumes, env and ports."""
    if not isinstance(patch, dict):
        if strategic and isinstance(patch, list) and isinstance(target, list) and _named(patch, target):
            merged = [copy.deepcopy(item) for item in target]
            for item in patch:
                index = next((i for i, old in enumerate(merged) if old.get("name") == item["name"]), None)
                if index is None:
                    merged.append(copy.deepcopy(item))
                else:
                    merged[index] = _merge(merged[index], item, strategic=True)
            return merged
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = _merge(result.get(key), value, strategic=strategic)
    return result


def _named(*lists: list[Any]) -> bool:
    return all(isinstance(item, dict) and "name" in item for items in lists for item in items)


def _applies(patch: Patch, obj: JSON) -> bool:
    name = (obj.get("metadata") or {}).get("name")
    return bool(patch.resource_type == obj.get("kind") and patch.resource_name in (name, "*"))


def apply_patches(obj: JSON, patches: Sequence[Patch]) -> JSON:
    """``obj`` with every patch addressed to it applied; a bad patch is an error naming its index."""
    matching = [(i, p) for i, p in enumerate(patches) if _applies(p, obj)]
    if not matching:
        return obj
    result = obj
    for index, patch in matching:
        where = f"spec.customizeComponents.patches[{index}]"
        if patch.type not in PATCH_TYPES:
            raise InvalidInstallConfigError(f"{where}.type: must be one of {', '.join(PATCH_TYPES)}")
        try:
            body = json.loads(patch.patch)
        except json.JSONDecodeError as err:
            raise InvalidInstallConfigError(f"{where}.patch: not JSON: {err}") from None
        try:
            if patch.type == "json":
                if not isinstance(body, list):
                    raise InvalidInstallConfigError(f"{where}.patch: a json patch is a list of operations")
                result = jsonpatch.apply(result, body)
            else:
                result = _merge(result, body, strategic=patch.type == "strategic")
        except (jsonpatch.PatchError, KeyError, TypeError) as err:
            raise InvalidInstallConfigError(f"{where}.patch: does not apply: {err}") from None
    annotations = result.setdefault("metadata", {}).setdefault("annotations", {})
    annotations[KUBE_VIRT_CUSTOMIZE_COMPONENT_ANNOTATION_HASH] = customizer_hash([p for _, p in matching])
    return result
