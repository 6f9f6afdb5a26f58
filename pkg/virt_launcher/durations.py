"""Go-style durations as virt-launcher's flags take them (``--qemu-timeout 3m``)."""

from __future__ import annotations

import re

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
