"""``kubevirt_node_deprecated_machine_types`` from the machine types libvirt's host capabilities mark
deprecated, as the node labeller reads them."""

from __future__ import annotations

import shutil
from pathlib import Path

from lxml import etree
from prometheus_client import CollectorRegistry, generate_latest

from kubevirt.monitoring.virt_handler.machine_types import (
    DeprecatedMachineTypesCollector,
    metric_descriptions,
)
from kubevirt.virt_config import ClusterConfig
from kubevirt.virt_handler.node_labeller import capabilities
from kubevirt.virt_handler.node_labeller.labeller import NodeLabeller

NAME = "kubevirt_node_deprecated_machine_types"
HELP = (
    "List of deprecated machine types based on the capabilities of individual nodes, as detected by "
    "virt-handler."
)
# The node labeller's captured capabilities (libvirt 9.0 / QEMU 7.2, two guest architectures).
TESTDATA = Path(__file__).parents[2] / "virt_handler" / "testdata" / "node_labeller"
CAPS = """<capabilities><host/>
  <guest><os_type>hvm</os_type><arch name='x86_64'>
    <machine maxCpus='255' deprecated='yes'>pc-i440fx-2.0</machine>
    <machine maxCpus='288'>pc-q35-7.2</machine>
    <machine canonical='pc-q35-7.2' maxCpus='288'>q35</machine>
    <machine maxCpus='255' deprecated='no'>pc-i440fx-7.2</machine>
    <machine maxCpus='255' deprecated='yes'>pc-i440fx-2.1</machine>
  </arch></guest>
  <guest><os_type>hvm</os_type><arch name='i686'>
    <machine maxCpus='255' deprecated='yes'>pc-i440fx-2.0</machine>
  </arch></guest>
</capabilities>"""


def scrape(collector: DeprecatedMachineTypesCollector) -> CollectorRegistry:
    registry = CollectorRegistry()
    registry.register(collector)
    return registry


def test_kubevirts_name_type_and_help() -> None:
    assert metric_descriptions() == [(NAME, "Gauge", HELP)]


def test_only_the_machine_types_marked_deprecated_once_each() -> None:
    root = etree.fromstring(CAPS.encode())
    assert capabilities.parse_deprecated_machines(root) == ("pc-i440fx-2.0", "pc-i440fx-2.1")


def test_the_labeller_reads_them_from_the_captured_capabilities() -> None:
    caps = capabilities.load(TESTDATA)
    # QEMU 7.2 deprecates the i440fx 1.x machines; both architectures list them, reported once.
    assert caps.deprecated_machines == ("pc-i440fx-1.5", "pc-i440fx-1.7", "pc-i440fx-1.4", "pc-i440fx-1.6")
    assert {"pc-i440fx-1.5", "pc-q35-7.2"} <= set(caps.machines)  # the labels still see every one

    labeller = NodeLabeller(
        api=None,  # type: ignore[arg-type]  # not reached: only the capabilities are read
        events=None,  # type: ignore[arg-type]
        node="node01",
        capabilities=caps,
        config=ClusterConfig,
    )
    assert labeller.deprecated_machine_types == caps.deprecated_machines


def test_a_rewritten_capabilities_file_gives_its_own(tmp_path: Path) -> None:
    shutil.copytree(TESTDATA, tmp_path, dirs_exist_ok=True)
    (tmp_path / capabilities.CAPABILITIES_FILE).write_text(CAPS)
    assert capabilities.load(tmp_path).deprecated_machines == ("pc-i440fx-2.0", "pc-i440fx-2.1")


def test_one_sample_per_deprecated_machine_type_labelled_with_the_node() -> None:
    registry = scrape(
        DeprecatedMachineTypesCollector(node="node01", machine_types=["pc-i440fx-2.0", "pc-i440fx-2.1"])
    )
    value = registry.get_sample_value
    assert value(NAME, {"machine_type": "pc-i440fx-2.0", "node": "node01"}) == 1.0
    assert value(NAME, {"machine_type": "pc-i440fx-2.1", "node": "node01"}) == 1.0
    text = generate_latest(registry).decode()
    assert f"# HELP {NAME} {HELP}\n# TYPE {NAME} gauge\n" in text
    assert text.count(f"{NAME}{{") == 2


def test_repeats_count_once() -> None:
    registry = scrape(DeprecatedMachineTypesCollector(node="n", machine_types=["pc-1", "pc-1", ""]))
    assert generate_latest(registry).decode().count(f"{NAME}{{") == 1


def test_a_node_without_deprecated_machine_types_exposes_no_family() -> None:
    assert generate_latest(scrape(DeprecatedMachineTypesCollector(node="node01"))) == b""
