"""List decoding: one pass into models, bad objects left out, the garbage collector restored."""

from __future__ import annotations

import gc
import json
from typing import Any

import pytest

from kubevirt.client import PODS, VIRTUAL_MACHINE_INSTANCES
from kubevirt.controller.decode import decoder_for
from kubevirt_api.core.v1 import VirtualMachineInstance


def vmi(name: str, devices: Any) -> dict[str, Any]:
    return {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachineInstance",
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {"domain": {"devices": devices}},
    }


def listed(*items: dict[str, Any]) -> bytes:
    return json.dumps({"metadata": {"resourceVersion": "42"}, "items": list(items)}).encode()


@pytest.mark.parametrize("bad", [False, True])
def test_model_lists_decode_in_one_pass_and_leave_out_bad_objects(bad: bool) -> None:
    decoder = decoder_for(VIRTUAL_MACHINE_INSTANCES, VirtualMachineInstance)
    items = [vmi("a", {}), vmi("b", "not an object" if bad else {})]
    objects, version = decoder.list(listed(*items))
    assert version == "42"
    assert [obj.metadata.name for obj in objects if obj.metadata] == (["a"] if bad else ["a", "b"])
    assert all(isinstance(obj, VirtualMachineInstance) for obj in objects)
    assert gc.isenabled()


def test_the_collector_stays_off_if_it_was_off() -> None:
    gc.disable()
    try:
        decoder_for(PODS, None).list(listed({"metadata": {"name": "p"}}))
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_kubernetes_kinds_stay_dicts_with_their_type_filled_in() -> None:
    objects, _ = decoder_for(PODS, None).list(listed({"metadata": {"name": "p", "namespace": "ns"}}))
    assert objects == [{"metadata": {"name": "p", "namespace": "ns"}, "apiVersion": "v1", "kind": "Pod"}]


def test_decode_must_be_a_model_or_a_callable() -> None:
    with pytest.raises(TypeError, match="decode"):
        decoder_for(PODS, 42)


def test_managed_fields_are_not_cached() -> None:
    managed = {"manager": "kubectl", "operation": "Update", "fieldsV1": {"f:spec": {}}}
    with_fields = vmi("a", {})
    with_fields["metadata"]["managedFields"] = [managed]
    [model], _ = decoder_for(VIRTUAL_MACHINE_INSTANCES, VirtualMachineInstance).list(listed(with_fields))
    assert model.metadata is not None
    assert model.metadata.managed_fields is None
    pod = {"metadata": {"name": "p", "managedFields": [managed]}}
    [cached], _ = decoder_for(PODS, None).list(listed(pod))
    assert "managedFields" not in cached["metadata"]
