"""AddVolumeOptions/RemoveVolumeOptions bodies, the checks KubeVirt makes against volumes and pending
requests, and the exact JSON patches (test operations first) it sends."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kubevirt.virt_api.rest.status import StatusError
from kubevirt.virt_api.rest.volume_requests import (
    VolumeRequest,
    VolumeRequestError,
    apply_volume_request,
    decode_add_volume,
    decode_remove_volume,
    spec_patch,
    status_patch,
    verify_volume_option,
)

JSON = dict[str, Any]
UNMARSHAL = "Can not unmarshal Request body to struct, error: "


def add(name: str = "vol1", **options: Any) -> VolumeRequest:
    return VolumeRequest(add={"name": name, "disk": {"name": name}, "volumeSource": {}, **options})


def remove(name: str = "vol1", **options: Any) -> VolumeRequest:
    return VolumeRequest(remove={"name": name, **options})


def refusal(call: Any, *args: Any) -> StatusError:
    with pytest.raises(StatusError) as caught:
        call(*args)
    return caught.value


# -- bodies ----------------------------------------------------------------------------------------


def test_the_disk_takes_the_volume_name_and_the_claim_becomes_hotpluggable() -> None:
    body = {
        "name": "data",
        "disk": {"name": "other", "disk": {"bus": "virtio"}, "serial": "s1", "unknown": 1},
        "volumeSource": {"persistentVolumeClaim": {"claimName": "claim", "readOnly": False}},
        "dryRun": ["All"],
    }
    request = decode_add_volume(json.dumps(body).encode())
    assert request.to_json() == {
        "addVolumeOptions": {
            "name": "data",
            "disk": {"name": "data", "disk": {"bus": "virtio"}, "serial": "s1"},
            "volumeSource": {"persistentVolumeClaim": {"claimName": "claim", "hotpluggable": True}},
            "dryRun": ["All"],
        }
    }
    assert request.dry_run


def test_a_yaml_body_with_a_data_volume() -> None:
    body = b"name: data\ndisk: {}\nvolumeSource:\n  dataVolume:\n    name: dv\n"
    request = decode_add_volume(body)
    assert request.add == {
        "name": "data",
        "disk": {"name": "data"},
        "volumeSource": {"dataVolume": {"name": "dv", "hotpluggable": True}},
    }
    assert not request.dry_run


def test_with_both_sources_kubevirt_marks_only_the_data_volume() -> None:
    source = {"dataVolume": {"name": "dv"}, "persistentVolumeClaim": {"claimName": "c"}}
    request = decode_add_volume(json.dumps({"name": "v", "disk": {}, "volumeSource": source}).encode())
    assert request.add is not None
    assert request.add["volumeSource"] == {
        "persistentVolumeClaim": {"claimName": "c"},
        "dataVolume": {"name": "dv", "hotpluggable": True},
    }


def test_missing_source_names_are_empty_as_go_decodes_them() -> None:
    body = {"name": "v", "disk": {}, "volumeSource": {"persistentVolumeClaim": {}}}
    request = decode_add_volume(json.dumps(body).encode())
    assert request.add is not None
    assert request.add["volumeSource"] == {"persistentVolumeClaim": {"claimName": "", "hotpluggable": True}}


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"", "AddVolumeOptions requires name to be set"),
        (b'{"name": null, "disk": {}, "volumeSource": {}}', "AddVolumeOptions requires name to be set"),
        (b'{"name": "v", "volumeSource": {}}', "AddVolumeOptions requires disk to not be nil"),
        (b'{"name": "v", "disk": null, "volumeSource": {}}', "AddVolumeOptions requires disk to not be nil"),
        (b'{"name": "v", "disk": {}}', "AddVolumeOptions requires VolumeSource to not be nil"),
        (
            b'{"name": 3}',
            UNMARSHAL
            + "json: cannot unmarshal number into Go struct field AddVolumeOptions.name of type string",
        ),
        (b"[1]", UNMARSHAL + "json: cannot unmarshal array into Go value of type v1.AddVolumeOptions"),
        (
            b'{"name": "v", "disk": "sda"}',
            UNMARSHAL
            + "json: cannot unmarshal string into Go struct field AddVolumeOptions.disk of type v1.Disk",
        ),
        (
            b'{"name": "v", "disk": {}, "volumeSource": []}',
            UNMARSHAL + "json: cannot unmarshal array into Go struct field AddVolumeOptions.volumeSource of "
            "type v1.HotplugVolumeSource",
        ),
        (
            b'{"name": "v", "dryRun": "All"}',
            UNMARSHAL + "json: cannot unmarshal string into Go struct field AddVolumeOptions.dryRun of type "
            "[]string",
        ),
        (
            b'{"name": "v", "disk": {"disk": {"bus": 1}, "bootOrder": "first"}, "volumeSource": {}}',
            UNMARSHAL + "AddVolumeOptions.disk.disk.bus: Input should be a valid string; "
            "AddVolumeOptions.disk.bootOrder: Input should be a valid integer",
        ),
    ],
)
def test_bad_add_bodies_are_bad_requests(body: bytes, message: str) -> None:
    err = refusal(decode_add_volume, body)
    assert (err.code, err.reason, err.message) == (400, "BadRequest", message)


def test_remove_bodies() -> None:
    assert decode_remove_volume(b'{"name": "v", "dryRun": ["All"]}') == remove("v", dryRun=["All"])
    assert decode_remove_volume(b"name: v\n").to_json() == {"removeVolumeOptions": {"name": "v"}}
    err = refusal(decode_remove_volume, b"{}")
    assert (err.code, err.message) == (400, "RemoveVolumeOptions requires name to be set")
    err = refusal(decode_remove_volume, b'{"name": ["v"]}')
    assert err.message == (
        UNMARSHAL
        + "json: cannot unmarshal array into Go struct field RemoveVolumeOptions.name of type string"
    )


def test_only_a_leading_all_makes_a_dry_run() -> None:
    assert remove(dryRun=["All"]).dry_run
    assert not remove(dryRun=["Some", "All"]).dry_run
    assert not remove().dry_run


def test_aliases_cannot_grow_a_body_beyond_its_bound() -> None:
    anchor = b"s: &s " + b"x" * 30000 + b"\n"
    err = refusal(decode_remove_volume, anchor + b"name: v\ndryRun: [*s, *s, *s]\n")
    assert err.message == UNMARSHAL + "options expand beyond 65536 bytes"
    body = anchor + b"name: v\ndisk: {serial: *s, tag: *s, cache: *s}\nvolumeSource: {}\n"
    err = refusal(decode_add_volume, body)
    assert err.message == UNMARSHAL + "options expand beyond 65536 bytes"


# -- checks ----------------------------------------------------------------------------------------

EXISTING: list[JSON] = [
    {"name": "root", "containerDisk": {"image": "img"}},
    {"name": "data", "persistentVolumeClaim": {"claimName": "claim", "hotpluggable": True}},
    {"name": "dv", "dataVolume": {"name": "dv-source"}},
]


@pytest.mark.parametrize(
    ("request_", "message"),
    [
        (add("data"), "Unable to add volume [data] because volume with that name already exists"),
        (
            add("new", volumeSource={"persistentVolumeClaim": {"claimName": "claim"}}),
            "Unable to add volume source [claim] because it already exists",
        ),
        (
            add("new", volumeSource={"dataVolume": {"name": "dv-source"}}),
            "Unable to add volume source [dv-source] because it already exists",
        ),
        (remove("root"), "Unable to remove volume [root] because it is not hotpluggable"),
        # Found by its source's name; the message names the volume.
        (remove("dv-source"), "Unable to remove volume [dv] because it is not hotpluggable"),
        (remove("absent"), "Unable to remove volume [absent] because it does not exist"),
    ],
)
def test_requests_that_do_not_fit_the_volumes(request_: VolumeRequest, message: str) -> None:
    with pytest.raises(VolumeRequestError) as caught:
        verify_volume_option(EXISTING, request_)
    assert str(caught.value) == message


def test_requests_that_fit() -> None:
    verify_volume_option(EXISTING, add("new", volumeSource={"persistentVolumeClaim": {"claimName": "other"}}))
    verify_volume_option(EXISTING, remove("data"))
    verify_volume_option(EXISTING, remove("claim"))  # a hotplugged volume found by its claim


# -- patches ---------------------------------------------------------------------------------------

VMI_SPEC: JSON = {
    "domain": {"devices": {"disks": [{"name": "existingvol"}]}},
    "volumes": [{"name": "existingvol", "persistentVolumeClaim": {"claimName": "testpvcdiskclaim"}}],
}


def test_the_vmi_patch_of_an_add_tests_both_lists_then_replaces_them() -> None:
    request = add("vol1", volumeSource={"persistentVolumeClaim": {"claimName": "c"}})
    assert spec_patch("", VMI_SPEC, request) == [
        {"op": "test", "path": "/spec/volumes", "value": VMI_SPEC["volumes"]},
        {"op": "test", "path": "/spec/domain/devices/disks", "value": [{"name": "existingvol"}]},
        {
            "op": "replace",
            "path": "/spec/volumes",
            "value": [
                *VMI_SPEC["volumes"],
                {"name": "vol1", "persistentVolumeClaim": {"claimName": "c", "hotpluggable": True}},
            ],
        },
        {
            "op": "replace",
            "path": "/spec/domain/devices/disks",
            "value": [{"name": "existingvol"}, {"name": "vol1"}],
        },
    ]


def test_the_vmi_patch_of_a_remove_leaves_empty_lists() -> None:
    assert spec_patch("", VMI_SPEC, remove("existingvol"))[2:] == [
        {"op": "replace", "path": "/spec/volumes", "value": []},
        {"op": "replace", "path": "/spec/domain/devices/disks", "value": []},
    ]


def test_a_template_without_volumes_is_patched_with_add_after_null_tests() -> None:
    assert spec_patch("/spec/template", {"domain": {"devices": {}}}, add("vol1")) == [
        {"op": "test", "path": "/spec/template/spec/volumes", "value": None},
        {"op": "test", "path": "/spec/template/spec/domain/devices/disks", "value": None},
        {"op": "add", "path": "/spec/template/spec/volumes", "value": [{"name": "vol1"}]},
        {"op": "add", "path": "/spec/template/spec/domain/devices/disks", "value": [{"name": "vol1"}]},
    ]


def test_applying_an_add_twice_changes_nothing_the_second_time() -> None:
    volumes, disks = apply_volume_request(VMI_SPEC, add("existingvol"))
    assert (volumes, disks) == (VMI_SPEC["volumes"], VMI_SPEC["domain"]["devices"]["disks"])


def vm_with(requests: list[JSON] | None) -> JSON:
    vm: JSON = {"metadata": {"name": "vm"}, "status": {"printableStatus": "Running"}}
    if requests is not None:
        vm["status"]["volumeRequests"] = requests
    return vm


def test_the_first_volume_request_is_added_after_a_null_test() -> None:
    assert status_patch(vm_with(None), add("vol1")) == [
        {"op": "test", "path": "/status/volumeRequests", "value": None},
        {"op": "add", "path": "/status/volumeRequests", "value": [add("vol1").to_json()]},
    ]


def test_a_volume_request_joins_those_pending() -> None:
    pending = [add("vol2").to_json()]
    assert status_patch(vm_with(pending), add("vol1")) == [
        {"op": "test", "path": "/status/volumeRequests", "value": pending},
        {"op": "replace", "path": "/status/volumeRequests", "value": [*pending, add("vol1").to_json()]},
    ]


def test_a_remove_replaces_the_pending_add_of_its_volume() -> None:
    pending = [add("vol2").to_json(), add("vol3").to_json()]
    assert status_patch(vm_with(pending), remove("vol2"))[1] == {
        "op": "replace",
        "path": "/status/volumeRequests",
        "value": [add("vol3").to_json(), remove("vol2").to_json()],
    }


@pytest.mark.parametrize(
    ("pending", "request_", "message"),
    [
        ([add("vol1").to_json()], add("vol1"), "add volume request for volume [vol1] already exists"),
        (
            [remove("vol1").to_json()],
            add("vol1"),
            "unable to add volume since a remove volume request for volume [vol1] already exists and is "
            "still being processed",
        ),
        (
            [remove("vol1").to_json()],
            remove("vol1"),
            "a remove volume request for volume [vol1] already exists and is still being processed",
        ),
    ],
)
def test_pending_requests_that_conflict(pending: list[JSON], request_: VolumeRequest, message: str) -> None:
    with pytest.raises(VolumeRequestError) as caught:
        status_patch(vm_with(pending), request_)
    assert str(caught.value) == message
