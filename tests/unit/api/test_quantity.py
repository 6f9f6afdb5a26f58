"""Quantity against the values Kubernetes' own resource.Quantity produces."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

from kubevirt_api.resource import BINARY_SI, DECIMAL_EXPONENT, DECIMAL_SI, Quantity, QuantityError

# (text, exact value, format after parsing)
PARSED = [
    ("0", 0, DECIMAL_SI),
    ("0Ki", 0, BINARY_SI),
    ("0M", 0, DECIMAL_SI),
    ("1", 1, DECIMAL_SI),
    ("1Ki", 1024, BINARY_SI),
    ("7Mi", 7 * 2**20, BINARY_SI),
    ("3Ei", 3 * 2**60, BINARY_SI),
    ("5n", Fraction(5, 10**9), DECIMAL_SI),
    ("4u", Fraction(4, 10**6), DECIMAL_SI),
    ("3m", Fraction(3, 1000), DECIMAL_SI),
    ("50k", 50_000, DECIMAL_SI),
    ("40T", 40 * 10**12, DECIMAL_SI),
    ("1E", 10**18, DECIMAL_SI),
    ("12E", 12 * 10**18, DECIMAL_SI),
    ("1E-3", Fraction(1, 1000), DECIMAL_EXPONENT),
    ("1e3", 1000, DECIMAL_EXPONENT),
    ("1.3E+6", 1_300_000, DECIMAL_EXPONENT),
    ("1.7E18", 17 * 10**17, DECIMAL_EXPONENT),
    ("100.035k", 100_035, DECIMAL_SI),
    ("0.0005k", Fraction(1, 2), DECIMAL_SI),
    ("0.00500", Fraction(5, 1000), DECIMAL_SI),
    ("0.5e-2", Fraction(5, 1000), DECIMAL_EXPONENT),
    ("6.987654321G", 6_987_654_321, DECIMAL_SI),
    ("1.01E", 101 * 10**16, DECIMAL_SI),
    # below one nano-unit: rounded up
    ("3.001n", Fraction(4, 10**9), DECIMAL_SI),
    ("1.1E-9", Fraction(2, 10**9), DECIMAL_EXPONENT),
    ("0.0000000001", Fraction(1, 10**9), DECIMAL_SI),
    ("0.00000012354", Fraction(124, 10**9), DECIMAL_SI),
    # binary quantities are capped at the largest int64
    ("9Ei", 2**63 - 1, BINARY_SI),
    ("9223372036854775807Ki", 2**63 - 1, BINARY_SI),
    ("100.035Ki", Fraction(10243584, 100), BINARY_SI),
    ("0.5Mi", 2**19, BINARY_SI),
    ("0.000000000001Ki", Fraction(2, 10**9), DECIMAL_SI),  # below 1: binary turns decimal
    (".001", Fraction(1, 1000), DECIMAL_SI),
    ("1.", 1, DECIMAL_SI),
    ("1.G", 10**9, DECIMAL_SI),
]


@pytest.mark.parametrize(("text", "value", "fmt"), PARSED)
def test_parse_value_and_format(text: str, value: Fraction | int, fmt: str) -> None:
    quantity = Quantity(text)
    assert quantity.as_fraction() == value
    assert quantity.format == fmt
    negative = Quantity("-" + text)
    assert negative.as_fraction() == -value
    assert negative.format == fmt
    assert Quantity("+" + text) == quantity


@pytest.mark.parametrize(
    "text", ["", "1.1.M", "1+1.0M", "0.1mi", "0.1am", "aoeu", ".5i", "1i", "-3.01i", "-3.01e-", " 1", "1 "]
)
def test_invalid_text_is_rejected(text: str) -> None:
    with pytest.raises(QuantityError):
        Quantity(text)


def test_error_messages_are_kubernetes_ones() -> None:
    with pytest.raises(QuantityError, match=r"^quantities must match the regular expression '\^\(\[\+-\]"):
        Quantity("12XB")
    with pytest.raises(QuantityError, match=r"^unable to parse quantity.s suffix$"):
        Quantity("0.1mi")


# (canonical text, another spelling of the same quantity that prints canonically)
CANONICAL = [
    ("1Gi", "1024Mi"),
    ("300Mi", "307200Ki"),
    ("1001Gi", "1025024Mi"),
    ("1Ti", "1024Gi"),
    ("1G", "1000M"),
    ("1G", "0.001T"),
    ("1m", "1000u"),
    ("1080m", "1.08"),
    ("1080m", "1080000000n"),
    ("500m", "0.5"),
    ("1536Mi", "1.5Gi"),
    ("1e9", ".001e12"),
    ("1e-3", "0.001e0"),
    ("1e-9", "1000e-12"),
    ("0", "00"),
    ("1024m", ".001Ki"),
    ("1024u", ".000001Ki"),
    ("1024n", ".000000001Ki"),
    ("2n", ".000000000001Ki"),
    ("1k", "1000"),
]


@pytest.mark.parametrize(("canonical", "other"), CANONICAL)
def test_canonical_string(canonical: str, other: str) -> None:
    assert str(Quantity(other)) == canonical
    assert str(Quantity(canonical)) == canonical
    if canonical != "0":
        assert str(Quantity("-" + other)) == "-" + canonical


@pytest.mark.parametrize(
    "text",
    ["6Ki", "80m", "300M", "1T", "1234567M", "3k", "1025", "80e-3", "300e6", "1080n", "1080u", "1000Mi"],
)
def test_canonical_text_is_kept(text: str) -> None:
    assert str(Quantity(text)) == text


def test_parsed_text_in_canonical_form_is_kept_verbatim_like_go() -> None:
    # Go keeps the original string when its fast path finds the number canonical, sign included.
    assert str(Quantity("+1Gi")) == "+1Gi"
    assert str(Quantity("1E3")) == "1E3"
    assert str(Quantity("+1Gi") + Quantity("0")) == "1Gi"


def test_values_round_up_away_from_zero() -> None:
    assert Quantity("9.01").value() == 10
    assert Quantity("-9.01").value() == -10
    assert Quantity("9.01").milli_value() == 9010
    assert Quantity("1n").value() == 1
    assert Quantity("1n").milli_value() == 1
    assert Quantity("1.5Gi").value() == 1610612736
    assert Quantity("100m").milli_value() == 100
    assert Quantity("2").scaled_value(-9) == 2 * 10**9
    assert Quantity.from_scaled(1, 2).scaled_value(-2) == 100 * 100


def test_arithmetic_and_comparison() -> None:
    assert Quantity("1Gi") + Quantity("512Mi") == Quantity("1536Mi")
    assert str(Quantity("1Gi") + Quantity("512Mi")) == "1536Mi"
    assert str(Quantity("1Gi") - Quantity("1Gi")) == "0"
    assert str(Quantity("0") + Quantity("1Ki")) == "1Ki"  # adding to zero keeps the other's format
    assert str(Quantity("100m") * 3) == "300m"
    assert str(2 * Quantity("1Gi")) == "2Gi"
    assert str(-Quantity("1Gi")) == "-1Gi"
    assert Quantity("1G") < Quantity("1Gi")
    assert Quantity("1000M") == Quantity("1G")
    assert Quantity("1Gi").cmp(Quantity("1G")) == 1
    assert len({Quantity("1k"), Quantity("1000")}) == 1
    assert str(Quantity.from_int(1024, BINARY_SI)) == "1Ki"
    assert str(Quantity.from_milli(1500)) == "1500m"


class Holder(BaseModel):
    quantity: Quantity


def test_pydantic_accepts_strings_and_numbers_and_dumps_strings() -> None:
    assert Holder.model_validate({"quantity": " 1Gi "}).model_dump(mode="json") == {"quantity": "1Gi"}
    assert Holder.model_validate({"quantity": 2}).model_dump(mode="json") == {"quantity": "2"}
    assert Holder.model_validate({"quantity": 0.5}).model_dump(mode="json") == {"quantity": "500m"}
    assert Holder.model_validate({"quantity": None}).model_dump(mode="json") == {"quantity": "0"}
    with pytest.raises(ValueError, match="regular expression"):
        Holder.model_validate({"quantity": True})


@given(st.integers(min_value=-(2**62), max_value=2**62), st.sampled_from([BINARY_SI, DECIMAL_SI]))
def test_canonical_text_parses_back_to_the_same_value(units: int, fmt: str) -> None:
    quantity = Quantity.from_int(units, fmt)  # type: ignore[arg-type]
    again = Quantity(str(quantity))
    assert again == quantity
    # a binary quantity without a 1024 factor prints as a plain number, which then reads as decimal
    assert str(Quantity(str(again))) == str(again)


@given(st.integers(min_value=-(10**15), max_value=10**15))
def test_milli_canonical_round_trip(milli: int) -> None:
    quantity = Quantity.from_milli(milli)
    assert Quantity(str(quantity)).milli_value() == milli


SUFFIX_VALUES = {
    **{s: Fraction(10) ** e for s, e in {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9}.items()},
    **{s: Fraction(10) ** e for s, e in {"T": 12, "P": 15, "E": 18}.items()},
    **{s: Fraction(2) ** e for s, e in {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}.items()},
}


@given(
    st.sampled_from(["", "+", "-"]),
    st.text("0123456789", max_size=12),
    st.one_of(st.none(), st.text("0123456789", max_size=12)),
    st.one_of(st.sampled_from(sorted(SUFFIX_VALUES)), st.integers(-20, 20).map(lambda e: f"e{e}")),
)
def test_value_is_the_exact_number_rounded_up_to_a_nano(
    sign: str, num: str, denom: str | None, suffix: str
) -> None:
    text = sign + num + ("" if denom is None else "." + denom) + suffix
    if text in {"", "+", "-"} or (not num and not denom and suffix):
        return
    exact = Fraction(int(num or "0") * 10 ** len(denom or "") + int(denom or "0"), 10 ** len(denom or ""))
    exact *= Fraction(10) ** int(suffix[1:]) if suffix.startswith("e") else SUFFIX_VALUES[suffix]
    nanos = -((-exact.numerator * 10**9) // exact.denominator)
    if suffix.endswith("i"):
        nanos = min(nanos, (2**63 - 1) * 10**9)
    expected = Fraction(-nanos if sign == "-" else nanos, 10**9)
    assert Quantity(text).as_fraction() == expected


def test_binary_quantity_beyond_the_largest_suffix_prints_in_ei() -> None:
    # 1024^40 has more factors of 1024 than there are binary suffixes; Ei takes the rest in the amount
    quantity = Quantity.from_int(2**400, BINARY_SI)
    assert str(quantity) == f"{2**340}Ei"
    assert str(Quantity.from_int(-(2**70), BINARY_SI)) == "-1024Ei"
