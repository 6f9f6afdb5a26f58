"""KubeVirt's own defaulted VMIs convert to KubeVirt's domains (converter alone, no defaulting)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kubevirt.virt_config import ClusterConfig
from kubevirt.virt_launcher.virtwrap.converter import ConverterContext, convert_vmi_to_domain
from kubevirt_api.core.v1 import VirtualMachineInstance
from kubevirt_testing.domain_equivalence import domain_differences

VALID = Path(__file__).resolve().parents[2] / "testdata" / "conformance" / "vmi" / "valid"
CASES = sorted(case for case in VALID.glob("*.json") if case.name.count(".") == 1)
# Both defaulted forms of every valid case; a missing one fails its test.
DEFAULTED = [
    case.with_suffix(suffix) for case in CASES for suffix in (".defaults.json", ".defaults.nohotplug.json")
]


def _context(case: str) -> ConverterContext:
    gates: frozenset[str] = frozenset()
    block: frozenset[str] = frozenset()
    flags = VALID / f"{case}.flags"
    if flags.exists():
        for token in flags.read_text().split():
            key, _, value = token.partition("=")
            if key == "--feature-gates":
                gates = frozenset(value.split(","))
            elif key == "--block-volumes":
                block = frozenset(value.split(","))
    return ConverterContext(cluster=ClusterConfig.build(feature_gates=gates), block_volumes=block)


def test_every_valid_case_has_both_defaulted_forms() -> None:
    assert len(CASES) == 54
    assert sorted(VALID.glob("*.defaults*.json")) == sorted(DEFAULTED)


@pytest.mark.parametrize("path", DEFAULTED, ids=lambda p: p.name)
def test_defaulted_vmi_converts_to_reference_domain(path: Path) -> None:
    case, _, rest = path.name.partition(".")
    expected = VALID / (f"{case}.domain.nohotplug.xml" if "nohotplug" in rest else f"{case}.domain.xml")
    vmi = VirtualMachineInstance.from_dict(json.loads(path.read_text()))
    domain = convert_vmi_to_domain(vmi, _context(case))
    assert domain_differences(expected.read_text(), domain.to_xml()) == []
