"""VirtualMachineInstancePresets (deprecated, still served) applied to a new VMI as KubeVirt v1.6 does.

Every preset in the VMI's namespace whose selector matches the VMI's labels is merged into
``spec.domain``: a setting the VMI leaves unset is copied from the preset, one it sets wins. Two matching
presets that disagree refuse the VMI; a preset disagreeing with the VMI is applied where it can be and
logged. Each preset that took effect is recorded as the annotation
``virtualmachinepreset.kubevirt.io/<name>: kubevirt.io/v1``. A VMI annotated
``virtualmachineinstancepresets.admission.kubevirt.io/exclude: "true"`` gets none.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from kubevirt.admission.quantity import QuantityError, parse
from kubevirt.admission.selectors import SelectorError, matches
from kubevirt.log import get_logger
from kubevirt_api.view import JSON

EXCLUDE_ANNOTATION: Final = "virtualmachineinstancepresets.admission.kubevirt.io/exclude"
APPLIED_ANNOTATION_PREFIX: Final = "virtualmachinepreset.kubevirt.io/"
APPLIED_ANNOTATION_VALUE: Final = "kubevirt.io/v1"

_log = get_logger()


class PresetConflictError(ValueError):
    """Matching presets disagree (or a preset's selector is invalid): the VMI is refused with this."""


def _obj(parent: Mapping[str, Any] | None, key: str) -> JSON | None:
    value = (parent or {}).get(key)
    return value if isinstance(value, dict) else None


def _same_quantity(a: Any, b: Any) -> bool:
    try:
        return parse(a) == parse(b)
    except QuantityError:
        return bool(a == b)


def _conflicts(preset: JSON, vmi: JSON) -> list[str]:
    """Where two domain specs set the same thing differently (KubeVirt's checkMergeConflicts)."""
    found: list[str] = []
    preset_requests = _obj(_obj(preset, "resources"), "requests") or {}
    vmi_requests = _obj(_obj(vmi, "resources"), "requests") or {}
    for key, wanted in preset_requests.items():
        if key in vmi_requests and not _same_quantity(wanted, vmi_requests[key]):
            found.append(f"spec.resources.requests[{key}]: {wanted} != {vmi_requests[key]}")
    for field in ("cpu", "firmware", "features"):
        if field in preset and field in vmi and preset[field] != vmi[field]:
            found.append(f"spec.{field}: {preset[field]} != {vmi[field]}")
    preset_clock, vmi_clock = _obj(preset, "clock"), _obj(vmi, "clock")
    if preset_clock is not None and vmi_clock is not None:
        if _clock_offset(preset_clock) != _clock_offset(vmi_clock):
            found.append(
                f"spec.clock.clockoffset: {_clock_offset(preset_clock)} != {_clock_offset(vmi_clock)}"
            )
        if "timer" in preset_clock and "timer" in vmi_clock and preset_clock["timer"] != vmi_clock["timer"]:
            found.append(f"spec.clock.timer: {preset_clock['timer']} != {vmi_clock['timer']}")
    preset_watchdog = (_obj(preset, "devices") or {}).get("watchdog")
    vmi_watchdog = (_obj(vmi, "devices") or {}).get("watchdog")
    if preset_watchdog is not None and vmi_watchdog is not None and preset_watchdog != vmi_watchdog:
        found.append(f"spec.devices.watchdog: {preset_watchdog} != {vmi_watchdog}")
    if (
        "ioThreadsPolicy" in preset
        and "ioThreadsPolicy" in vmi
        and preset["ioThreadsPolicy"] != vmi["ioThreadsPolicy"]
    ):
        found.append(f"spec.ioThreadsPolicy: {preset['ioThreadsPolicy']} != {vmi['ioThreadsPolicy']}")
    return found


def _clock_offset(clock: JSON) -> JSON:
    return {key: clock[key] for key in ("utc", "timezone") if key in clock}


def _aggregate(errors: Sequence[str]) -> str:
    # Kubernetes' error aggregate: one error as itself, several in brackets.
    return errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"


def _copy_if_unset(
    preset: JSON, vmi: JSON, field: str, equal: Callable[[Any, Any], bool] | None = None
) -> bool:
    """Copies ``field`` when the VMI lacks it; True when the VMI's value then equals the preset's."""
    if field not in preset:
        return False
    if field not in vmi:
        vmi[field] = copy.deepcopy(preset[field])
    return equal(vmi[field], preset[field]) if equal else bool(vmi[field] == preset[field])


def _same_requests(a: JSON, b: JSON) -> bool:
    return a.keys() == b.keys() and all(_same_quantity(a[key], b[key]) for key in a)


def merge_domain(preset: JSON, domain: JSON) -> tuple[bool, list[str]]:
    """Merges a preset's domain into the VMI's (in place): (whether any setting took effect, conflicts)."""
    conflicts = _conflicts(preset, domain)
    applied = False
    preset_requests = _obj(_obj(preset, "resources"), "requests")
    if preset_requests:
        resources = domain.setdefault("resources", {})
        applied |= _copy_if_unset({"requests": preset_requests}, resources, "requests", _same_requests)
    for field in ("cpu", "firmware", "features", "ioThreadsPolicy"):
        applied |= _copy_if_unset(preset, domain, field)
    preset_clock = _obj(preset, "clock")
    if preset_clock is not None:
        if "clock" not in domain:
            domain["clock"] = copy.deepcopy(_clock_offset(preset_clock))
        applied |= domain["clock"] == preset_clock
        if "timer" in preset_clock:
            applied |= _copy_if_unset(preset_clock, domain["clock"], "timer")
    preset_devices = _obj(preset, "devices") or {}
    if "watchdog" in preset_devices:
        applied |= _copy_if_unset(preset_devices, domain.setdefault("devices", {}), "watchdog")
    return applied, conflicts


def _matching(presets: Sequence[JSON], labels: Mapping[str, str]) -> list[JSON]:
    found = []
    for preset in presets:
        selector = _obj(_obj(preset, "spec"), "selector") or {}
        try:
            if matches(selector, labels):
                found.append(preset)
        except SelectorError as err:
            raise PresetConflictError(str(err)) from None
    return found


def _name(preset: JSON) -> str:
    return str((_obj(preset, "metadata") or {}).get("name", ""))


def _domain(preset: JSON) -> JSON:
    return _obj(_obj(preset, "spec"), "domain") or {}


def apply_presets(vmi: JSON, presets: Sequence[JSON]) -> None:
    """Applies the matching ``presets`` (all of the VMI's namespace) to ``vmi`` in place; raises
    :class:`PresetConflictError` when matching presets disagree with each other."""
    metadata = vmi.setdefault("metadata", {})
    annotations = metadata.get("annotations") or {}
    if annotations.get(EXCLUDE_ANNOTATION) == "true":
        _log.info("VMI excluded from preset logic", name=metadata.get("name"))
        return
    matching = _matching(presets, metadata.get("labels") or {})
    if not matching:
        return
    errors = [
        f"presets '{_name(preset)}' and '{_name(earlier)}' conflict: {_aggregate(found)}"
        for index, preset in enumerate(matching)
        for earlier in matching[:index]
        if (found := _conflicts(_domain(preset), _domain(earlier)))
    ]
    if errors:
        raise PresetConflictError(
            f"VirtualMachinePresets cannot be applied due to conflicts: {_aggregate(errors)}"
        )
    domain = vmi.setdefault("spec", {}).setdefault("domain", {})
    for preset in matching:
        applied, conflicts = merge_domain(_domain(preset), domain)
        if applied:
            if conflicts:
                _log.warning(
                    "some settings of a VirtualMachineInstancePreset were not applied",
                    preset=_name(preset),
                    conflicts=_aggregate(conflicts),
                )
            if not isinstance(metadata.get("annotations"), dict):
                metadata["annotations"] = {}
            metadata["annotations"][APPLIED_ANNOTATION_PREFIX + _name(preset)] = APPLIED_ANNOTATION_VALUE
        else:
            _log.warning(
                "unable to apply a VirtualMachineInstancePreset", preset=_name(preset), conflicts=conflicts
            )
