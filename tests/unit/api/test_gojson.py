"""``to_go_json`` writes what KubeVirt's Go code writes, and its layout table matches the models."""

from __future__ import annotations

import importlib
import inspect
import json
import pkgutil
from pathlib import Path
from typing import Any

import pytest

import kubevirt_api
from kubevirt_api._go_layout import GO_LAYOUT
from kubevirt_api.base import ApiModel, Condition, TypeMeta
from kubevirt_api.core.v1 import VirtualMachineInstance, VirtualMachineInstanceReplicaSet
from kubevirt_api.gojson import layout_key, to_go_json

VALID = Path(__file__).parents[2] / "testdata" / "conformance" / "vmi" / "valid"


def all_models() -> list[type[ApiModel]]:
    found: dict[str, type[ApiModel]] = {}
    for module_info in pkgutil.walk_packages(kubevirt_api.__path__, "kubevirt_api."):
        module = importlib.import_module(module_info.name)
        for _, value in inspect.getmembers(module, inspect.isclass):
            # Private classes are shared field sets, never encoded themselves.
            if (
                issubclass(value, ApiModel)
                and value.__module__ == module.__name__
                and not value.__name__.startswith("_")
            ):
                found[layout_key(value)] = value
    for abstract in (ApiModel, TypeMeta, Condition):
        found.pop(layout_key(abstract), None)
    return list(found.values())


@pytest.mark.parametrize("path", sorted(VALID.glob("*.defaults*.json")), ids=lambda p: p.name)
def test_webhook_output_is_reproduced_exactly(path: Path) -> None:
    # These files are KubeVirt's own encoding of the defaulted VMI: same fields, values and order.
    text = path.read_text()
    out = to_go_json(VirtualMachineInstance.from_dict(json.loads(text)))
    assert json.dumps(out, indent=2) == json.dumps(json.loads(text), indent=2)


def test_layout_table_matches_every_model() -> None:
    models = all_models()
    assert len(models) > 250
    for model in models:
        spec = GO_LAYOUT[layout_key(model)].split()
        aliases = {info.alias or name for name, info in model.model_fields.items()}
        assert set(spec[::2]) == aliases, layout_key(model)
    assert set(GO_LAYOUT) == {layout_key(m) for m in models}


def test_go_writes_struct_values_and_drops_empty_omitempty_fields() -> None:
    vmi = VirtualMachineInstance.from_dict(
        {
            "metadata": {"name": "x", "labels": {}},
            "spec": {
                "domain": {"devices": {"disks": []}, "cpu": {"cores": 0}},
                "volumes": [{"name": "d", "emptyDisk": {"capacity": "1Gi"}}],
                "hostname": "",
            },
        }
    )
    out: dict[str, Any] = to_go_json(vmi)
    assert out["metadata"] == {"name": "x", "creationTimestamp": None}
    assert out["spec"]["domain"] == {"resources": {}, "cpu": {}, "devices": {}}
    assert out["spec"]["volumes"] == [{"name": "d", "emptyDisk": {"capacity": "1Gi"}}]
    assert "hostname" not in out["spec"]
    assert out["status"] == {"guestOSInfo": {}, "runtimeUser": 0}  # runtimeUser is not omitempty
    assert list(out) == ["metadata", "spec", "status"]


def test_map_keys_are_written_sorted_like_go_maps() -> None:
    vmi = VirtualMachineInstance.from_dict(
        {
            "metadata": {"name": "x", "labels": {"b": "1", "a": "2", "B": "3"}},
            "spec": {"domain": {"devices": {}, "resources": {"requests": {"memory": "1Gi", "cpu": "1"}}}},
        }
    )
    out: dict[str, Any] = to_go_json(vmi)
    assert list(out["metadata"]["labels"]) == ["B", "a", "b"]
    assert list(out["spec"]["domain"]["resources"]["requests"]) == ["cpu", "memory"]
    assert list(out) == ["metadata", "spec", "status"]  # struct fields keep Go's declaration order


def test_required_fields_and_zero_quantities_are_written() -> None:
    rs = VirtualMachineInstanceReplicaSet.from_dict(
        {
            "spec": {
                "selector": {},
                "template": {
                    "spec": {
                        "domain": {"devices": {}},
                        "volumes": [{"name": "h", "hostDisk": {"path": "/p", "type": "Disk"}}],
                    }
                },
            }
        }
    )
    out = to_go_json(rs)
    template = out["spec"]["template"]
    assert template["metadata"] == {"creationTimestamp": None}
    assert template["spec"]["volumes"][0]["hostDisk"] == {"path": "/p", "type": "Disk", "capacity": "0"}
    assert out["spec"]["selector"] == {}
