"""virt-handler's KSM handling against a fake API and a stand-in for the host's sysfs and meminfo."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubevirt.client import NODES
from kubevirt.virt_config import ClusterConfig
from kubevirt.virt_handler.ksm import KsmHandler, KsmState, Tuning, next_state, tuning_from_annotations
from kubevirt_testing.fake_kube_api import FakeKubeApi

NODE = "node01"
GIB_KB = 1024 * 1024


def _config(selector: dict[str, object] | None) -> ClusterConfig:
    ksm = {} if selector is None else {"nodeLabelSelector": selector}
    return ClusterConfig.from_kubevirt({"spec": {"configuration": {"ksmConfiguration": ksm}}})


@pytest.fixture
def sysfs(tmp_path: Path) -> Path:
    ksm = tmp_path / "ksm"
    ksm.mkdir()
    (ksm / "run").write_text("0\n")
    (ksm / "pages_to_scan").write_text("100\n")
    (ksm / "sleep_millisecs").write_text("20\n")
    return ksm


def _meminfo(tmp_path: Path, total_gib: int, available_gib: float) -> Path:
    path = tmp_path / "meminfo"
    path.write_text(
        f"MemTotal:       {total_gib * GIB_KB} kB\nMemFree:  1 kB\n"
        f"MemAvailable:   {int(available_gib * GIB_KB)} kB\n"
    )
    return path


def _handler(api: FakeKubeApi, config: ClusterConfig, sysfs: Path, meminfo: Path) -> KsmHandler:
    return KsmHandler(api=api, node=NODE, config=lambda: config, ksm_dir=sysfs, meminfo=meminfo)


def _node(api: FakeKubeApi, **labels: str) -> None:
    api.add(NODES, {"metadata": {"name": NODE, "labels": labels}})


def test_a_selected_node_under_pressure_starts_ksm(tmp_path: Path, sysfs: Path) -> None:
    api = FakeKubeApi()
    _node(api, ksm="on")
    handler = _handler(api, _config({"matchLabels": {"ksm": "on"}}), sysfs, _meminfo(tmp_path, 16, 1))
    assert handler.spin() is True
    assert (sysfs / "run").read_text() == "1"
    assert (sysfs / "pages_to_scan").read_text() == "100"  # pages_init
    assert (sysfs / "sleep_millisecs").read_text() == str(100 * 16 * GIB_KB // (15 * GIB_KB))
    metadata = api.get(NODES, None, NODE)["metadata"]
    assert metadata["labels"]["kubevirt.io/ksm-enabled"] == "true"
    assert metadata["annotations"]["kubevirt.io/ksm-handler-managed"] == "true"


def test_ksm_it_started_stops_when_the_node_is_no_longer_selected(tmp_path: Path, sysfs: Path) -> None:
    api = FakeKubeApi()
    _node(api, ksm="on")
    meminfo = _meminfo(tmp_path, 16, 1)
    _handler(api, _config({"matchLabels": {"ksm": "on"}}), sysfs, meminfo).spin()
    assert _handler(api, _config(None), sysfs, meminfo).spin() is False
    assert (sysfs / "run").read_text() == "0"
    metadata = api.get(NODES, None, NODE)["metadata"]
    assert metadata["labels"]["kubevirt.io/ksm-enabled"] == "false"
    assert metadata["annotations"]["kubevirt.io/ksm-handler-managed"] == "false"


def test_ksm_someone_else_started_is_left_alone(tmp_path: Path, sysfs: Path) -> None:
    api = FakeKubeApi()
    _node(api)
    (sysfs / "run").write_text("1\n")
    _handler(api, _config({"matchLabels": {"ksm": "on"}}), sysfs, _meminfo(tmp_path, 16, 8)).spin()
    assert (sysfs / "run").read_text() == "1\n"


def test_a_kernel_without_ksm_is_never_eligible(tmp_path: Path) -> None:
    api = FakeKubeApi()
    _node(api)
    handler = _handler(api, _config({}), tmp_path / "absent", _meminfo(tmp_path, 16, 1))
    assert handler.spin() is False
    assert api.get(NODES, None, NODE)["metadata"]["labels"]["kubevirt.io/ksm-enabled"] == "false"


def test_an_empty_selector_selects_every_node_and_no_pressure_keeps_ksm_off(
    tmp_path: Path, sysfs: Path
) -> None:
    api = FakeKubeApi()
    _node(api)
    assert _handler(api, _config({}), sysfs, _meminfo(tmp_path, 16, 8)).spin() is True
    assert (sysfs / "run").read_text() == "0"
    assert api.get(NODES, None, NODE)["metadata"]["annotations"]["kubevirt.io/ksm-handler-managed"] == "false"


def test_the_scan_rate_rises_under_pressure_and_decays_without() -> None:
    tuning = Tuning()
    pressed = {"total_kb": 16 * GIB_KB, "available_kb": 1 * GIB_KB}
    free = {"total_kb": 16 * GIB_KB, "available_kb": 8 * GIB_KB}
    assert next_state(tuning, running=True, pages=1200, **pressed).pages == 1250  # capped at pages_max
    assert next_state(tuning, running=True, pages=500, **pressed).pages == 800
    assert next_state(tuning, running=True, pages=500, **free) == KsmState(True, 200, 450)
    assert next_state(tuning, running=True, pages=100, **free).running is False  # below pages_min
    assert next_state(tuning, running=False, pages=100, **free) == KsmState(running=False)


def test_overrides_are_read_within_bounds() -> None:
    tuning = tuning_from_annotations(
        {
            "kubevirt.io/ksm-pages-boost-override": "10",
            "kubevirt.io/ksm-pages-decay-override": "5",  # must be <= 0: the default
            "kubevirt.io/ksm-free-percent-override": "0.5",
            "kubevirt.io/ksm-pages-min-override": "nonsense",
        }
    )
    assert (tuning.pages_boost, tuning.pages_decay, tuning.free_percent, tuning.pages_min) == (
        10,
        -50,
        0.5,
        64,
    )
