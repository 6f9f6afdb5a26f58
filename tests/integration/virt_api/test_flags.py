"""virt-api refuses timing flags that would spin its loops or drop every request."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from kubevirt_cmd.virt_api import main

TIMING_FLAGS = ("--request-timeout", "--cert-reload-interval", "--config-refresh-interval")


@pytest.mark.parametrize("flag", TIMING_FLAGS)
@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf", "soon"])
def test_timing_flags_must_be_finite_positive_seconds(flag: str, value: str) -> None:
    result = CliRunner().invoke(main, [f"{flag}={value}", "--tls-cert-file=/nonexistent/tls.crt"])
    assert result.exit_code == 2, result.output
    assert flag in result.output
    assert value in result.output


@pytest.mark.parametrize("flag", TIMING_FLAGS)
def test_timing_flags_accept_fractions_of_a_second(flag: str) -> None:
    # Past flag parsing, virt-api stops at the missing certificate (exit 2 without a usage error).
    result = CliRunner().invoke(main, [f"{flag}=0.25", "--tls-cert-file=/nonexistent/tls.crt"])
    assert result.exit_code == 2
    assert "TLS file not found" in result.output
    assert "Invalid value" not in result.output
