"""The clone's restore patches, names and checks, as KubeVirt v1.6's clone controller builds them."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from kubevirt.admission import jsonpatch
from kubevirt.virt_controller.watch.clone.spec import (
    content_problems,
    generate_patches,
    generated_vm_name,
    kept_keys,
    new_restore,
    new_snapshot,
    owning_clone_key,
    removal_patches,
    template_needs_backend_storage,
    volume_snapshot_problems,
)

from .world import MAC, clone_vm_manifest, snapshot_content

JSON = dict[str, Any]
CLONE: JSON = {"metadata": {"name": "c", "namespace": "ns", "uid": "cuid"}, "spec": {}}


def patched(vm: JSON, patches: list[str]) -> JSON:
    """The VM with the patches applied as the restore controller applies them."""
    operations = [json.loads(patch) for patch in patches]
    result: JSON = jsonpatch.apply(vm, operations, replace_sets_missing_keys=True)
    return result


def interfaces(vm: JSON) -> list[JSON]:
    return list(vm["spec"]["template"]["spec"]["domain"]["devices"]["interfaces"])


# MAC addresses, serial, firmware UUID.


def test_patches_are_json_strings_as_go_writes_them() -> None:
    patches = generate_patches(clone_vm_manifest(), {})
    assert patches == [
        '{"op":"replace","path":"/spec/template/spec/domain/devices/interfaces/0/macAddress","value":""}',
        '{"op":"replace","path":"/spec/template/spec/domain/firmware/serial","value":""}',
        '{"op":"replace","path":"/spec/template/spec/domain/firmware/uuid","value":""}',
    ]


def test_each_interface_gets_its_new_mac_or_none() -> None:
    vm = clone_vm_manifest()
    vm["spec"]["template"]["spec"]["domain"]["devices"]["interfaces"] = [
        {"name": f"nic{i}", "bridge": {}, "macAddress": f"02:00:00:00:00:0{i}"} for i in range(4)
    ]
    new_macs = {"nic0": "02:aa:00:00:00:00", "nic2": "02:aa:00:00:00:02"}
    result = patched(vm, generate_patches(vm, {"newMacAddresses": new_macs}))
    assert [iface["macAddress"] for iface in interfaces(result)] == [
        "02:aa:00:00:00:00",
        "",
        "02:aa:00:00:00:02",
        "",
    ]


def test_a_missing_mac_or_serial_is_set_as_kubevirts_json_patch_library_does() -> None:
    vm = clone_vm_manifest()
    del interfaces(vm)[0]["macAddress"]
    vm["spec"]["template"]["spec"]["domain"]["firmware"] = {}
    patches = generate_patches(vm, {"newMacAddresses": {"default": MAC}, "newSMBiosSerial": "new-serial"})
    with pytest.raises(jsonpatch.PatchError):  # RFC 6902 refuses a replace of a missing key
        jsonpatch.apply(vm, [json.loads(p) for p in patches])
    result = patched(vm, patches)
    assert interfaces(result)[0]["macAddress"] == MAC
    assert result["spec"]["template"]["spec"]["domain"]["firmware"] == {"serial": "new-serial", "uuid": ""}


def test_without_firmware_neither_serial_nor_uuid_is_patched() -> None:
    vm = clone_vm_manifest()
    del vm["spec"]["template"]["spec"]["domain"]["firmware"]
    result = patched(vm, generate_patches(vm, {"newSMBiosSerial": "s"}))
    assert "firmware" not in result["spec"]["template"]["spec"]["domain"]


def test_custom_patches_come_last_and_win() -> None:
    custom = [
        '{"op":"replace","path":"/spec/template/spec/domain/firmware/serial","value":"replaced"}',
        '{"op":"add","path":"/spec/template/metadata/labels/example","value":"extra"}',
    ]
    vm = clone_vm_manifest()
    patches = generate_patches(vm, {"newSMBiosSerial": "api-serial", "patches": custom})
    assert patches[-2:] == custom
    result = patched(vm, patches)
    assert result["spec"]["template"]["spec"]["domain"]["firmware"]["serial"] == "replaced"
    assert result["spec"]["template"]["metadata"]["labels"]["example"] == "extra"


# Label and annotation filters.

KEYS = {
    "prefix1/something1": "true",
    "prefix1/something2": "true",
    "prefix2/something1": "true",
    "prefix2/something2": "true",
    "somePrefix/something": "true",
    "somePrefix2/something": "true",
}
FILTERS = ["prefix*", "!prefix1/something2", "!prefix2/*", "somePrefix2/something"]


@pytest.mark.parametrize(
    ("field", "filter_field", "where"),
    [
        ("labels", "labelFilters", "metadata"),
        ("annotations", "annotationFilters", "metadata"),
        ("labels", "labelFilters", "template"),
        ("annotations", "annotationFilters", "template"),
    ],
)
def test_filters_keep_matching_keys_and_negations_win(field: str, filter_field: str, where: str) -> None:
    vm = clone_vm_manifest()
    meta = vm["metadata"] if where == "metadata" else vm["spec"]["template"]["metadata"]
    meta[field] = dict(KEYS)
    spec = {filter_field: FILTERS} if where == "metadata" else {"template": {filter_field: FILTERS}}
    result = patched(vm, generate_patches(vm, spec))
    result_meta = result["metadata"] if where == "metadata" else result["spec"]["template"]["metadata"]
    assert result_meta[field] == {"prefix1/something1": "true", "somePrefix2/something": "true"}


def test_no_filters_keep_everything_and_an_empty_list_nothing() -> None:
    assert removal_patches(KEYS, None, "/metadata/labels") == []
    removes = removal_patches({"a/b": "1", "c~d": "2"}, [], "/metadata/labels")
    assert removes == [
        '{"op":"remove","path":"/metadata/labels/a~1b"}',
        '{"op":"remove","path":"/metadata/labels/c~0d"}',
    ]


def test_a_lone_wildcard_keeps_everything_and_a_bad_pattern_matches_nothing() -> None:
    assert kept_keys(KEYS, ["*"]) == set(KEYS)
    assert kept_keys(KEYS, ["*", "!("]) == set(KEYS)
    assert kept_keys(KEYS, ["("]) == set()
    # Patterns are unanchored regular expressions, as Go's regexp.MatchString reads them.
    assert kept_keys(KEYS, ["something2$"]) == {"prefix1/something2", "prefix2/something2"}


def test_the_last_restore_annotation_is_never_removed() -> None:
    vm = clone_vm_manifest()
    vm["metadata"]["annotations"]["restore.kubevirt.io/lastRestoreUID"] = "bar"
    result = patched(vm, generate_patches(vm, {"annotationFilters": ["somekey/*"]}))
    assert result["metadata"]["annotations"] == {"restore.kubevirt.io/lastRestoreUID": "bar"}


# Names, objects, ownership.


def test_the_snapshot_is_of_the_source_vm_and_owned_by_the_clone() -> None:
    snapshot = new_snapshot(CLONE, {"metadata": {"name": "vm", "namespace": "ns"}})
    assert snapshot["metadata"] == {
        "name": "tmp-snapshot-cuid",
        "namespace": "ns",
        "ownerReferences": [
            {
                "apiVersion": "clone.kubevirt.io/v1beta1",
                "kind": "VirtualMachineClone",
                "name": "c",
                "uid": "cuid",
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ],
    }
    assert snapshot["spec"] == {"source": {"apiGroup": "kubevirt.io", "kind": "VirtualMachine", "name": "vm"}}
    assert owning_clone_key(snapshot) == "ns/c"
    assert owning_clone_key({"metadata": {"namespace": "ns", "ownerReferences": []}}) is None


def test_a_restore_without_a_target_name_makes_one_up() -> None:
    clone = copy.deepcopy(CLONE)
    clone["spec"]["target"] = {"apiGroup": "kubevirt.io", "kind": "VirtualMachine"}
    restore = new_restore(clone, "vm", "snap", [], "abcde")
    assert restore["metadata"]["name"] == "tmp-restore-cuid"
    assert restore["spec"] == {
        "target": {"apiGroup": "kubevirt.io", "kind": "VirtualMachine", "name": "vm-clone-abcde"},
        "virtualMachineSnapshotName": "snap",
    }
    assert generated_vm_name("x" * 250, "abcde") == "clone-object-abcde"


# Checks.


def test_claim_volumes_must_be_known_snapshottable() -> None:
    vm = clone_vm_manifest()
    vm["spec"]["template"]["spec"]["volumes"].append({"name": "dv", "dataVolume": {"name": "dv"}})
    vm["spec"]["template"]["spec"]["volumes"].append({"name": "ci", "cloudInitNoCloud": {}})
    assert volume_snapshot_problems(vm) == (
        "Virtual Machine volume rootdisk snapshot support unknown\n"
        "Virtual Machine volume dv snapshot support unknown"
    )
    vm["status"] = {"volumeSnapshotStatuses": [{"name": "rootdisk", "enabled": True}, {"name": "dv"}]}
    assert volume_snapshot_problems(vm) == "Virtual Machine volume dv does not support snapshots"


@pytest.mark.parametrize(
    ("domain", "needed"),
    [
        ({"devices": {"tpm": {"persistent": True}}}, True),
        ({"devices": {"tpm": {"persistent": True, "enabled": False}}}, False),
        ({"devices": {"tpm": {}}}, False),
        ({"firmware": {"bootloader": {"efi": {"persistent": True}}}}, True),
        ({"firmware": {"bootloader": {"efi": {}}}}, False),
    ],
)
def test_backend_storage_is_a_persistent_tpm_or_efi(domain: JSON, needed: bool) -> None:
    vm = {"spec": {"template": {"spec": {"domain": domain}}}}
    assert template_needs_backend_storage(vm) is needed


def test_a_content_must_name_its_snapshot_and_back_up_every_claim() -> None:
    vm = clone_vm_manifest()
    snapshot = {"metadata": {"name": "snap", "namespace": "default"}}
    assert content_problems(snapshot, None, "c") == "snapshot content c in namespace default does not exist"
    content = snapshot_content("snap", vm)
    assert content_problems(snapshot, content, "c") is None
    content["spec"]["source"]["virtualMachine"]["spec"]["template"]["spec"]["volumes"].append(
        {"name": "vol1", "dataVolume": {"name": "dv1"}}
    )
    assert content_problems(snapshot, content, "c") == "volume vol1 is not backed up in snapshot snap"
    content["spec"]["source"]["virtualMachine"]["spec"]["template"]["spec"]["domain"]["devices"]["tpm"] = {
        "persistent": True
    }
    assert content_problems(snapshot, content, "c") == (
        "Clone of source with backendstorage is not supported: snapshot default/snap"
    )
    del content["spec"]["virtualMachineSnapshotName"]
    assert content_problems(snapshot, content, "c") == "cannot get snapshot name from content c"
