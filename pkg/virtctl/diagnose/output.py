"""The walk as text for people and as JSON (one object per link) for scripts."""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Sequence
from typing import Any

from kubevirt.virtctl.diagnose.verdict import Link, Status

__all__ = ["as_json", "as_text", "summary"]

_KIND_NAMES = {"vm": "VirtualMachine", "vmi": "VirtualMachineInstance"}
_WIDTH = max(len(status.value) for status in Status) + 2


def summary(links: Sequence[Link]) -> str:
    broken = next((link for link in links if link.status is Status.BROKEN), None)
    if broken is not None:
        return f"Stopped at the {broken.name} link: {broken.message}"
    unknown = [link.name for link in links if link.status is Status.UNKNOWN]
    if unknown:
        return f"No broken link found; not checked: {', '.join(unknown)}."
    return "No broken link found."


def _evidence_lines(value: Any, indent: str) -> list[str]:
    if isinstance(value, dict):
        lines = []
        for key, item in value.items():
            if isinstance(item, (dict, list)) and not item:
                continue  # nothing to show
            if isinstance(item, (dict, list)):
                lines.append(f"{indent}{key}:")
                lines.extend(_evidence_lines(item, indent + "  "))
            else:
                lines.append(f"{indent}{key}: {json.dumps(item) if not isinstance(item, str) else item}")
        return lines
    if isinstance(value, list):
        return [
            line
            for item in value
            for line in (
                _evidence_lines(item, indent + "  ")
                if isinstance(item, (dict, list))
                else [f"{indent}- {item}"]
            )
        ]
    return [f"{indent}{value}"]


def _printable(text: str) -> str:
    """One output line with its control characters (newlines too) written as escapes: messages and
    events come from other users of the cluster, and must not move the cursor or forge lines."""
    return "".join(char if unicodedata.category(char)[0] != "C" else repr(char)[1:-1] for char in text)


def as_text(kind: str, namespace: str, name: str, links: Sequence[Link]) -> str:
    """One line per link; the evidence under a broken or unseen link."""
    lines = [f"{_KIND_NAMES.get(kind, kind)} {namespace}/{name}"]
    for link in links:
        lines.append(f"  {('[' + link.status.value + ']').ljust(_WIDTH)} {link.name}: {link.message}")
        if link.status in (Status.BROKEN, Status.UNKNOWN) and link.evidence:
            lines.extend(_evidence_lines(link.evidence, " " * (_WIDTH + 5)))
    lines.append(summary(links))
    return "\n".join(_printable(line) for line in lines)


def as_json(links: Sequence[Link]) -> str:
    return json.dumps([link.to_json() for link in links], indent=2)
