"""Go durations written as Go's ``Duration.String`` writes them (a ``metav1.Duration``: an export's
``ttlDuration``, a freeze's ``unfreezeTimeout``, the operator's certificate lifetimes), and read back by
Go's ``ParseDuration`` to the same value."""

from __future__ import annotations

import pytest

from kubevirt.service.durations import (
    HOUR,
    MICROSECOND,
    MILLISECOND,
    MINUTE,
    SECOND,
    format_go_duration,
    parse_go_duration,
)

CASES = [
    (0, "0s"),
    (7, "7ns"),
    (1_500, "1.5µs"),
    (MICROSECOND + 1, "1.001µs"),
    (100 * MILLISECOND, "100ms"),
    (45 * SECOND, "45s"),
    (SECOND + 1, "1.000000001s"),
    (90 * SECOND, "1m30s"),
    (2 * MINUTE, "2m0s"),
    (HOUR, "1h0m0s"),
    (7200 * SECOND, "2h0m0s"),
    (5400 * SECOND + SECOND // 2, "1h30m0.5s"),
    (168 * HOUR, "168h0m0s"),
    (-SECOND, "-1s"),
    (-(90 * MINUTE), "-1h30m0s"),
    (2**63 - 1, "2562047h47m16.854775807s"),
]


@pytest.mark.parametrize(("nanoseconds", "text"), CASES)
def test_durations_print_as_go_prints_them(nanoseconds: int, text: str) -> None:
    assert format_go_duration(nanoseconds) == text


@pytest.mark.parametrize(("nanoseconds", "text"), CASES)
def test_a_printed_duration_parses_back_to_itself(nanoseconds: int, text: str) -> None:
    assert parse_go_duration(text) == nanoseconds
