"""CDI's storage arithmetic: the claim asked for an image, and the image a claim holds."""

from __future__ import annotations

import pytest

from kubevirt.cdi import sizes

MIB = 1 << 20
GIB = 1 << 30


def test_a_claim_for_an_image_adds_the_overhead_to_the_aligned_size() -> None:
    assert sizes.required_space(0.06, GIB) == 1138166334  # ceil(1 GiB * 1.06)
    assert sizes.required_space(0.0, MIB + 1) == 2 * MIB  # aligned up first
    assert sizes.required_space(0.06, 0) == 0


def test_the_image_a_claim_holds_is_aligned_down_and_round_trips() -> None:
    for requested in (MIB, 64 * MIB, GIB, 10 * GIB + 3 * MIB):
        assert sizes.usable_space(0.06, sizes.required_space(0.06, requested)) == requested
    assert sizes.usable_space(0.06, MIB) == 0  # less than a whole MiB once the overhead is set aside
    assert sizes.usable_space(0.0, 5 * MIB - 1) == 4 * MIB


@pytest.mark.parametrize(("text", "value"), [("0.06", 0.06), ("0", 0.0), ("1", 1.0), ("0.055", 0.055)])
def test_overheads_between_zero_and_one_parse(text: str, value: float) -> None:
    assert sizes.parse_overhead(text) == value


@pytest.mark.parametrize("text", ["1.5", "-0.1", "nan", "lots"])
def test_other_overheads_are_refused(text: str) -> None:
    with pytest.raises(ValueError, match="not a number between 0 and 1"):
        sizes.parse_overhead(text)
