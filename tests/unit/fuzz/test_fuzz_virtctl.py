"""Fuzz ``virtctl render`` and ``virtctl validate``: any input ends in an answer or a clean refusal.

Allowed outcomes: exit 0 with output; exit 1 (refused: causes as JSON, or one error line); exit 2 (the
input cannot be read: one error line). Never an exception, never a traceback.
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from hypothesis import given

from kubevirt.virtctl.root import root
from kubevirt_testing.fuzz_inputs import FUZZ_SETTINGS, manifest_texts


def _is_one_error_line(text: str) -> bool:
    return text.startswith("error: ") and text.count("\n") == 1


def _is_causes(text: str) -> bool:
    try:
        causes = json.loads(text)
    except ValueError:
        return False
    return isinstance(causes, list) and all(
        isinstance(cause, dict) and "message" in cause for cause in causes
    )


@pytest.mark.parametrize("command", ["render", "validate"])
@FUZZ_SETTINGS
@given(text=manifest_texts())
def test_any_manifest_is_answered_or_cleanly_refused(command: str, text: str) -> None:
    result = CliRunner().invoke(root, [command, "-f", "-"], input=text)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output
    code, out, err = result.exit_code, result.stdout, result.stderr
    if command == "validate":
        assert code in (0, 1, 2)
        assert _is_causes(out) if code in (0, 1) else _is_one_error_line(err)
        assert (code == 0) == (code != 2 and json.loads(out) == [])
    else:
        assert code in (0, 1, 2)
        if code == 0:
            assert out.startswith("<domain")
        elif code == 1:
            assert _is_causes(err) or _is_one_error_line(err)
        else:
            assert _is_one_error_line(err)
