"""VirtualMachineInstancePresets are applied by the VMI mutating webhook as KubeVirt v1.6 applies them."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from kubevirt.admission.presets import PresetConflictError, apply_presets, merge_domain
from kubevirt.admission.registration import VALIDATING_HOOKS
from kubevirt.admission.review import CREATE, AdmissionRequest, GroupVersionResource
from kubevirt.admission.state import StaticClusterState
from kubevirt.virt_api.app import build_context
from kubevirt.virt_api.webhooks.routes import VMIPRESET_VALIDATE, webhook_handlers
from kubevirt.virt_config import ClusterConfig
from kubevirt_testing.vmi_mutation import mutate_vmi_create

JSON = dict[str, Any]


def preset(name: str, domain: JSON, match: dict[str, str] | None = None, namespace: str = "ns") -> JSON:
    return {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachineInstancePreset",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"selector": {"matchLabels": match or {"flavor": "small"}}, "domain": domain},
    }


def vmi(
    labels: dict[str, str] | None = None, annotations: dict[str, str] | None = None, **domain: Any
) -> JSON:
    metadata: JSON = {"name": "v", "namespace": "ns", "labels": labels or {"flavor": "small"}}
    if annotations is not None:
        metadata["annotations"] = annotations
    return {"metadata": metadata, "spec": {"domain": {"devices": {}, **domain}}}


def test_a_matching_preset_fills_what_the_vmi_leaves_unset_and_is_recorded() -> None:
    target = vmi()
    apply_presets(
        target,
        [
            preset(
                "small",
                {
                    "cpu": {"cores": 2},
                    "resources": {"requests": {"memory": "64Mi"}},
                    "devices": {"watchdog": {"name": "w", "i6300esb": {}}},
                    "clock": {"utc": {}, "timer": {"rtc": {}}},
                },
            )
        ],
    )
    domain = target["spec"]["domain"]
    assert domain["cpu"] == {"cores": 2}
    assert domain["resources"] == {"requests": {"memory": "64Mi"}}
    assert domain["devices"]["watchdog"] == {"name": "w", "i6300esb": {}}
    assert domain["clock"] == {"utc": {}, "timer": {"rtc": {}}}
    assert target["metadata"]["annotations"] == {"virtualmachinepreset.kubevirt.io/small": "kubevirt.io/v1"}


def test_presets_that_do_not_match_or_excluded_vmis_change_nothing() -> None:
    other = vmi(labels={"flavor": "large"})
    apply_presets(other, [preset("small", {"cpu": {"cores": 2}})])
    assert "cpu" not in other["spec"]["domain"]
    excluded = vmi(annotations={"virtualmachineinstancepresets.admission.kubevirt.io/exclude": "true"})
    apply_presets(excluded, [preset("small", {"cpu": {"cores": 2}})])
    assert "cpu" not in excluded["spec"]["domain"]
    assert "virtualmachinepreset.kubevirt.io/small" not in excluded["metadata"]["annotations"]


def test_an_empty_selector_matches_every_vmi() -> None:
    target = vmi(labels={})
    everything = preset("all", {"firmware": {"serial": "s"}})
    everything["spec"]["selector"] = {}
    apply_presets(target, [everything])
    assert target["spec"]["domain"]["firmware"] == {"serial": "s"}


def test_the_vmi_wins_and_a_preset_that_changed_nothing_is_not_recorded() -> None:
    target = vmi(cpu={"cores": 4})
    apply_presets(target, [preset("small", {"cpu": {"cores": 2}})])
    assert target["spec"]["domain"]["cpu"] == {"cores": 4}
    assert "annotations" not in target["metadata"]


def test_equal_quantities_are_no_conflict() -> None:
    domain: JSON = {"resources": {"requests": {"memory": "1024Mi"}}}
    applied, conflicts = merge_domain({"resources": {"requests": {"memory": "1Gi"}}}, domain)
    assert (applied, conflicts) == (True, [])


def test_matching_presets_that_disagree_refuse_the_vmi() -> None:
    target = vmi()
    with pytest.raises(PresetConflictError) as err:
        apply_presets(target, [preset("a", {"cpu": {"cores": 2}}), preset("b", {"cpu": {"cores": 4}})])
    message = str(err.value)
    assert message.startswith(
        "VirtualMachinePresets cannot be applied due to conflicts: presets 'b' and 'a' conflict:"
    )
    assert "spec.cpu" in message
    assert "cpu" not in target["spec"]["domain"]


def test_the_mutating_webhook_applies_presets_before_defaulting() -> None:
    state = StaticClusterState(
        presets=[
            preset("small", {"cpu": {"cores": 3}}),
            preset("elsewhere", {"firmware": {"serial": "x"}}, namespace="other"),
        ]
    )
    answer = mutate_vmi_create(state, vmi(memory={"guest": "128Mi"}))
    assert answer["allowed"] is True
    patch = json.loads(base64.b64decode(answer["patch"]))
    by_path = {op["path"]: op["value"] for op in patch}
    assert by_path["/spec"]["domain"]["cpu"]["cores"] == 3
    assert (
        "firmware" not in by_path["/spec"]["domain"]
        or by_path["/spec"]["domain"]["firmware"].get("serial") != "x"
    )
    assert by_path["/metadata"]["annotations"]["virtualmachinepreset.kubevirt.io/small"] == "kubevirt.io/v1"


def test_the_mutating_webhook_refuses_conflicting_presets_with_422() -> None:
    state = StaticClusterState(
        presets=[preset("a", {"cpu": {"cores": 2}}), preset("b", {"cpu": {"cores": 4}})]
    )
    answer = mutate_vmi_create(state, vmi())
    assert answer["allowed"] is False
    assert answer["status"]["code"] == 422
    assert "VirtualMachinePresets cannot be applied due to conflicts" in answer["status"]["message"]


def _validate(obj: JSON) -> JSON:
    handler = webhook_handlers(build_context(ClusterConfig()))[VMIPRESET_VALIDATE]
    request = AdmissionRequest(
        uid="u",
        operation=CREATE,
        resource=GroupVersionResource("kubevirt.io", "v1", "virtualmachineinstancepresets"),
        sub_resource="",
        name="p",
        namespace="ns",
        object=obj,
        old_object=None,
    )
    return handler(request).to_dict("u")


def test_the_preset_validator_accepts_a_valid_domain() -> None:
    assert _validate(preset("small", {"cpu": {"cores": 2}, "devices": {}}))["allowed"] is True


def test_the_preset_validator_refuses_a_missing_domain_and_invalid_firmware_with_field_paths() -> None:
    missing = preset("small", {})
    del missing["spec"]["domain"]
    answer = _validate(missing)
    assert answer["allowed"] is False
    assert answer["status"]["details"]["causes"] == [
        {"reason": "FieldValueRequired", "message": "missing domain.", "field": "spec.domain"}
    ]
    both = preset("small", {"firmware": {"bootloader": {"bios": {}, "efi": {}}}, "devices": {}})
    answer = _validate(both)
    assert answer["allowed"] is False
    [cause] = answer["status"]["details"]["causes"]
    assert cause["field"] == "spec.domain.firmware.bootloader"
    assert "mutually exclusive" in cause["message"]


def test_the_preset_validator_is_registered_like_kubevirts() -> None:
    [hook] = [h for h in VALIDATING_HOOKS if h.path == VMIPRESET_VALIDATE]
    assert hook.name == "virtualmachinepreset-validator.kubevirt.io"
    assert (hook.operations, hook.resources) == (("CREATE", "UPDATE"), ("virtualmachineinstancepresets",))
