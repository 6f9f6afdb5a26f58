"""The light view of decoded API objects: typed reads, zero values for absent fields, errors with paths."""

from __future__ import annotations

from typing import Any

import pytest

from kubevirt_api.view import FieldError, View, VMIView


class OwnError(Exception):
    """A component's own error type, which the view raises for it."""


VMI: dict[str, Any] = {
    "metadata": {"name": "vm", "uid": "u-1", "annotations": {"a": "b"}},
    "spec": {
        "domain": {"devices": {"disks": [{"name": "root"}], "interfaces": [{"name": "default"}]}},
        "volumes": [
            {"name": "root", "containerDisk": {"image": "i"}},
            {"name": "data", "persistentVolumeClaim": {"claimName": "c"}},
            {"name": "scratch", "emptyDisk": None},
        ],
    },
    "status": {"phase": "Running", "volumeStatus": [{"name": "data"}]},
}


def test_the_vmi_fields_read_by_name() -> None:
    vmi = VMIView(VMI)
    assert (vmi.name, vmi.namespace, vmi.uid, vmi.phase) == ("vm", "default", "u-1", "Running")
    assert vmi.annotations == {"a": "b"}
    assert [disk.string("name") for disk in vmi.disks()] == ["root"]
    assert [interface.path for interface in vmi.interfaces()] == ["spec.domain.devices.interfaces[0]"]
    assert [volume.get("name") for volume in vmi.volumes()] == ["root", "data", "scratch"]
    assert [status.string("name") for status in vmi.volume_statuses()] == ["data"]
    assert vmi.networks() == []


def test_volume_sources_skip_null_sources_and_carry_their_paths() -> None:
    found = [
        (index, source.path) for index, _, source in VMIView(VMI).volume_sources("persistentVolumeClaim")
    ]
    assert found == [(1, "spec.volumes[1].persistentVolumeClaim")]
    assert list(VMIView(VMI).volume_sources("emptyDisk")) == []  # null is absent, as in Go


def test_absent_values_read_as_zero_values() -> None:
    view = View({"present": None})
    assert view.string("present") == ""
    assert view.string("gone", default="x") == "x"
    assert view.integer("gone") == 0
    assert view.integer("gone", default=30) == 30
    assert view.boolean("gone") is False
    assert view.optional_boolean("gone") is None
    assert view.items("gone") == []
    assert view.strings("gone") == []
    assert view.string_map("gone") == {}
    assert not view.object("gone")
    assert view.optional_object("gone") is None
    assert view.object("gone").path == "gone"
    assert not view.has("present")
    assert "present" not in view


@pytest.mark.parametrize(
    ("data", "read", "message"),
    [
        ({"spec": []}, lambda v: v.object("spec"), "spec: must be an object"),
        (
            {"spec": {"volumes": {}}},
            lambda v: v.object("spec").items("volumes"),
            "spec.volumes: must be a list",
        ),
        ({"items": [{}, 3]}, lambda v: v.items("items"), r"items\[1\]: must be an object"),
        ({"name": 7}, lambda v: v.string("name"), "name: must be a string"),
        ({}, lambda v: v.string("name", required=True), "name: required"),
        ({"n": "7"}, lambda v: v.integer("n"), "n: must be an integer, got '7'"),
        ({"n": True}, lambda v: v.integer("n"), "n: must be an integer"),
        ({"n": -1}, lambda v: v.integer("n", minimum=0), "n: must be at least 0, got -1"),
        ({"n": 9}, lambda v: v.integer("n", maximum=8), "n: must be at most 8, got 9"),
        ({"b": "yes"}, lambda v: v.boolean("b"), "b: must be true or false"),
        ({"l": ["a", 1]}, lambda v: v.strings("l"), r"l\[1\]: must be a string"),
        ({"m": {"k": 1}}, lambda v: v.string_map("m"), "m.k: must be a string"),
    ],
)
def test_a_wrong_type_names_its_field(data: dict[str, Any], read: Any, message: str) -> None:
    with pytest.raises(FieldError, match=message):
        read(View(data))


def test_a_whole_number_written_as_a_float_is_an_integer() -> None:
    assert View({"n": 2.0}).integer("n") == 2
    with pytest.raises(FieldError):
        View({"n": 2.5}).integer("n")


def test_errors_are_the_callers_type_down_the_tree() -> None:
    vmi = VMIView(VMI).reporting(OwnError)
    with pytest.raises(OwnError, match=r"spec\.volumes\[0\]\.containerDisk\.image: must be an integer"):
        vmi.volumes()[0].object("containerDisk").integer("image")
    with pytest.raises(OwnError, match=r"metadata\.name: required"):
        _ = VMIView({}, error=OwnError).name


def test_of_accepts_objects_and_null_only() -> None:
    assert VMIView.of(None).data == {}
    assert isinstance(VMIView.of({"metadata": {}}), VMIView)
    with pytest.raises(OwnError, match="vmi: must be an object"):
        View.of([1], "vmi", error=OwnError)
