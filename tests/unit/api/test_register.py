"""Group/version/kind facts and the kind → model scheme."""

from __future__ import annotations

import pytest

from kubevirt_api.core.v1 import VirtualMachine, VirtualMachineInstance, VirtualMachineInstanceList
from kubevirt_api.core.v1.register import SCHEME, gvk_of, model_for, new_object
from kubevirt_api.instancetype.v1beta1 import VirtualMachineClusterInstancetype, VirtualMachinePreference
from kubevirt_api.pool.v1alpha1 import VirtualMachinePool


def test_new_object_sets_api_version_and_kind() -> None:
    vm = new_object(VirtualMachine, spec={"template": {"spec": {"domain": {"devices": {}}}}})
    assert vm.to_dict()["apiVersion"] == "kubevirt.io/v1"
    assert vm.to_dict()["kind"] == "VirtualMachine"
    pool = new_object(
        VirtualMachinePool, spec={"selector": {}, "virtualMachineTemplate": {"spec": {"template": {}}}}
    )
    assert (pool.api_version, pool.kind) == ("pool.kubevirt.io/v1alpha1", "VirtualMachinePool")


def test_scheme_serves_v1_and_deprecated_v1alpha3() -> None:
    assert model_for("kubevirt.io/v1", "VirtualMachineInstance") is VirtualMachineInstance
    assert model_for("kubevirt.io/v1alpha3", "VirtualMachineInstanceList") is VirtualMachineInstanceList
    assert model_for("pool.kubevirt.io/v1alpha1", "VirtualMachinePool") is VirtualMachinePool
    with pytest.raises(KeyError):
        model_for("kubevirt.io/v2", "VirtualMachine")
    # kubevirt.io kinds in two versions, the pool, instance types, snapshot/export/clone kinds in two
    # versions, the migration policy in one.
    assert len(SCHEME) == 12 * 2 + 2 + 8 + 8 * 2 + 2 * 2 + 2
    assert gvk_of(VirtualMachineInstance).api_version == "kubevirt.io/v1"
    with pytest.raises(KeyError):
        gvk_of(VirtualMachineInstanceList.__mro__[1])  # TypeMeta is no kind


def test_instancetype_kinds_are_served_as_v1beta1_only() -> None:
    assert (
        model_for("instancetype.kubevirt.io/v1beta1", "VirtualMachineClusterInstancetype")
        is VirtualMachineClusterInstancetype
    )
    with pytest.raises(KeyError):
        model_for("instancetype.kubevirt.io/v1alpha2", "VirtualMachinePreference")
    preference = new_object(VirtualMachinePreference, spec={})
    assert preference.to_dict() == {
        "apiVersion": "instancetype.kubevirt.io/v1beta1",
        "kind": "VirtualMachinePreference",
        "spec": {},
    }
