"""Routes of features the project lacks: KubeVirt's answer with the gate off, 501 with it on."""

from __future__ import annotations

from kubevirt.virt_api.rest.gated import GATED_ROUTES, refusal
from kubevirt.virt_config import ClusterConfig


def test_gate_off_is_kubevirts_bad_request_and_gate_on_is_not_implemented() -> None:
    [memory_dump] = [r for r in GATED_ROUTES if r.subresource == "memorydump"]
    off = refusal(memory_dump, ClusterConfig)
    assert (off.code, off.message) == (
        400,
        "Enable DeclarativeHotplugVolumes or HotplugVolumes feature gate to use this API.",
    )
    on = refusal(memory_dump, lambda: ClusterConfig.build(feature_gates=["HotplugVolumes"]))
    assert (on.code, on.reason) == (501, "NotImplemented")
    assert on.message == "virtualmachines/memorydump is not implemented"


def test_volume_hotplug_is_no_longer_gated_here() -> None:
    assert not [r for r in GATED_ROUTES if r.subresource in ("addvolume", "removevolume")]
