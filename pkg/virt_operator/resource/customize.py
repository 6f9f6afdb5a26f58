"""``spec.customizeComponents``: user patches applied on top of the generated objects, and extra flags
for the components (KubeVirt's ``apply/patches.go``).

Patches address objects by ``resourceType`` (kind) and ``resourceName``, either of them ``*``, without
regard to case. Flags become a strategic patch of the component's container command. Every object of
a kind that can be customized carries a hash of the customizations in
``kubevirt.io/customizer-identifier``, so a change of them is visible on the objects.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Sequence
from typing import Any

from kubevirt.admission import jsonpatch
from kubevirt.virt_operator.resource.config import InstallConfig, InvalidInstallConfigError, Patch
from kubevirt_api.core.v1.constants import KUBE_VIRT_CUSTOMIZE_COMPONENT_ANNOTATION_HASH
from kubevirt_api.view import JSON

PATCH_TYPES = ("json", "merge", "strategic")
CUSTOMIZABLE_KINDS = frozenset(
    {
        "Deployment",
        "Service",
        "DaemonSet",
        "ValidatingWebhookConfiguration",
        "MutatingWebhookConfiguration",
        "APIService",
    }
)
_FLAG_TARGETS = {"virt-api": "Deployment", "virt-controller": "Deployment", "virt-handler": "DaemonSet"}


def flag_patches(config: InstallConfig) -> tuple[Patch, ...]:
    """A component's flags replace its container's command with the binary and ``--flag value`` pairs
    (its arguments stay), as KubeVirt does."""
    patches = []
    for component, flags in config.flags:
        command = [component]
        for flag, value in flags:
            command.append(f"--{flag.lower()}")
            if value:
                command.append(value)
        body = {"spec": {"template": {"spec": {"containers": [{"name": component, "command": command}]}}}}
        patches.append(Patch(component, _FLAG_TARGETS[component], json.dumps(body), "strategic"))
    return tuple(patches)


def customizer_hash(config: InstallConfig) -> str:
    body = json.dumps(
        {
            "patches": [[p.resource_name, p.resource_type, p.patch, p.type] for p in config.patches],
            "flags": config.flags,
        },
        sort_keys=True,
    )
    return hashlib.sha1(body.encode()).hexdigest()


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


def _matches(value: str, key: str) -> bool:
    return value == "*" or value.lower() == key.lower()


def _applies(patch: Patch, obj: JSON) -> bool:
    name = str((obj.get("metadata") or {}).get("name", ""))
    return _matches(patch.resource_type, str(obj.get("kind", ""))) and _matches(patch.resource_name, name)


def _apply_one(obj: JSON, patch: Patch, where: str) -> JSON:
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
            patched: JSON = jsonpatch.apply(obj, body)
            return patched
        return dict(_merge(obj, body, strategic=patch.type == "strategic"))
    except (jsonpatch.PatchError, KeyError, TypeError) as err:
        raise InvalidInstallConfigError(f"{where}.patch: does not apply: {err}") from None


def customize(obj: JSON, config: InstallConfig, digest: str | None = None) -> JSON:
    """``obj`` with every patch and flag addressed to it applied; a bad patch is an error naming it."""
    if obj.get("kind") not in CUSTOMIZABLE_KINDS:
        return obj
    result = obj
    addressed: Sequence[tuple[str, Patch]] = [
        *((f"spec.customizeComponents.patches[{i}]", p) for i, p in enumerate(config.patches)),
        *(("spec.customizeComponents.flags", p) for p in flag_patches(config)),
    ]
    for where, patch in addressed:
        if _applies(patch, result):
            result = _apply_one(result, patch, where)
    annotations = result.setdefault("metadata", {}).setdefault("annotations", {})
    annotations[KUBE_VIRT_CUSTOMIZE_COMPONENT_ANNOTATION_HASH] = digest or customizer_hash(config)
    return result
