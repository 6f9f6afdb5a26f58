"""Raw VMI → defaults → converter gives KubeVirt's domain, or KubeVirt's conversion error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kubevirt.virt_launcher.virtwrap.converter import ConversionError
from kubevirt.virtctl.offline_vmi import RenderError
from kubevirt.virtctl.render import options_from_flags, render_domain
from kubevirt_testing.domain_equivalence import domain_differences

CONFORMANCE = Path(__file__).resolve().parents[2] / "testdata" / "conformance" / "vmi"
WEBHOOK_REJECTION = "rejected by VMI mutating webhook: "
# The reference's own guard against topologies KubeVirt would try to allocate (not KubeVirt's words).
GUARD_PREFIX, GUARD_SUFFIX = "oracle guard: ", "; KubeVirt's converter would try"


def _cases() -> list[tuple[Path, str, Path]]:
    cases = []
    for source in sorted(CONFORMANCE.glob("*/*.json")):
        if source.name.count(".") != 1:
            continue
        case = source.name.removesuffix(".json")
        for strategy, suffix in (("LiveUpdate", ""), ("Stage", ".nohotplug")):
            domain = source.parent / f"{case}.domain{suffix}.xml"
            error = source.parent / f"{case}.convert{suffix}.err"
            # Each case expects a domain or an error; with neither, the domain is missing and the
            # test fails reading it.
            cases.append((source, strategy, error if error.exists() else domain))
    return cases


CASES = _cases()


def test_every_case_is_covered_under_both_strategies() -> None:
    assert sum(1 for source, _, _ in CASES if source.parent.name == "valid") == 2 * 54
    assert sum(1 for source, _, _ in CASES if source.parent.name == "invalid") == 2 * 42
    assert sum(1 for _, _, expected in CASES if expected.suffix == ".xml") == 2 * (54 + 29)
    assert sum(1 for _, _, expected in CASES if expected.suffix == ".err") == 2 * 13
    assert all(expected.exists() for _, _, expected in CASES)


def _render(source: Path, strategy: str) -> str:
    flags = source.with_name(source.name.removesuffix(".json") + ".flags")
    options = options_from_flags(
        flags.read_text().split() if flags.exists() else [], rollout_strategy=strategy
    )
    return render_domain(json.loads(source.read_text()), options).to_xml()


@pytest.mark.parametrize(("source", "strategy", "expected"), CASES, ids=lambda v: getattr(v, "name", v))
def test_rendering_matches_kubevirt(source: Path, strategy: str, expected: Path) -> None:
    if expected.suffix == ".xml":
        assert domain_differences(expected.read_text(), _render(source, strategy)) == []
        return
    message = expected.read_text().strip()
    if message.startswith(WEBHOOK_REJECTION):
        # The webhook's schema check: we must refuse too, naming the same field.
        cause = json.loads(message.removeprefix(WEBHOOK_REJECTION))[0]["message"]
        field_path = cause.split(" in body ")[0]
        with pytest.raises(RenderError) as refused:
            _render(source, strategy)
        our_field = str(refused.value).split(":")[0]
        assert _without_indexes(our_field) == field_path
        return
    with pytest.raises(ConversionError) as failed:
        _render(source, strategy)
    if message.startswith(GUARD_PREFIX):
        message = message.removeprefix(GUARD_PREFIX).removesuffix(GUARD_SUFFIX)
    assert failed.value.message == message
    assert failed.value.field.startswith("spec.")


def _without_indexes(path: str) -> str:
    out, depth = [], 0
    for ch in path:
        depth += ch == "["
        if depth == 0:
            out.append(ch)
        depth -= ch == "]"
    return "".join(out)


def test_conversion_error_names_the_field_in_one_line() -> None:
    raw = json.loads((CONFORMANCE / "valid" / "001-minimal-containerdisk.json").read_text())
    raw["spec"]["domain"]["devices"]["disks"].append({"name": "ghost", "disk": {"bus": "virtio"}})
    with pytest.raises(ConversionError) as failed:
        render_domain(raw, options_from_flags([]))
    assert str(failed.value) == "spec.domain.devices.disks[1]: no matching volume with name ghost found"


def test_null_firmware_gets_the_same_stand_in_uuid_as_absent_firmware() -> None:
    raw = json.loads((CONFORMANCE / "valid" / "001-minimal-containerdisk.json").read_text())
    raw["spec"]["domain"].pop("firmware", None)
    absent = render_domain(raw, options_from_flags([])).to_xml()
    raw["spec"]["domain"]["firmware"] = None
    null = render_domain(raw, options_from_flags([])).to_xml()
    assert '<entry name="uuid">' in null
    assert null == absent


def test_flags_name_what_they_refuse() -> None:
    assert options_from_flags(["--domain-type=qemu", "--rollout=Stage"]).domain_type == "qemu"
    with pytest.raises(RenderError, match="unknown domain type 'xen'"):
        options_from_flags(["--domain-type=xen"])
    with pytest.raises(RenderError, match="unknown rollout strategy 'Later'"):
        options_from_flags(["--rollout-strategy=Later"])
    with pytest.raises(RenderError, match="unknown flag --colour"):
        options_from_flags(["--colour=red"])
