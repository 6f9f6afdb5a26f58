"""Go durations on command lines (``3m``, ``240s``, ``1m30s``), as KubeVirt's binaries take them."""

from __future__ import annotations

import math
import re
from typing import Any

import click

_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h)")
_DURATION_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_duration(text: str) -> float:
    """A Go duration (``3m``, ``240s``, ``1m30s``) or plain seconds, in seconds."""
    text = text.strip()
    if re.fullmatch(r"\d+(?:\.\d+)?", text):
        return float(text)
    parts = _DURATION_PART.findall(text)
    if not parts or "".join(number + unit for number, unit in parts) != text:
        raise ValueError(f"not a duration: {text!r} (examples: 3m, 240s, 1m30s)")
    return sum(float(number) * _DURATION_UNITS[unit] for number, unit in parts)


class PositiveDuration(click.ParamType[float]):
    """A Go duration above zero, in seconds."""

    name = "duration"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        if isinstance(value, float):
            return value
        try:
            seconds = parse_duration(str(value))
        except ValueError as err:
            self.fail(str(err), param, ctx)
        if not math.isfinite(seconds) or seconds <= 0:
            self.fail(f"{value!r} must be a duration above 0", param, ctx)
        return seconds


POSITIVE_DURATION = PositiveDuration()
