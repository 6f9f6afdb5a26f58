"""The termination message kubelet hands CDI's controller: JSON when the importer succeeds (or asks
for scratch space), one line of plain text when it fails."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any, Final

IMPORT_COMPLETE: Final = "Import Complete"
MAX_LENGTH: Final = 4096  # kubelet truncates longer messages


@dataclasses.dataclass(frozen=True)
class TerminationMessage:
    """CDI's TerminationMessage; None fields are left out, in CDI's key order."""

    scratch_space_required: bool | None = None
    preallocation_applied: bool | None = None
    deadline_passed: bool | None = None  # the upload server's: its deadline came before any upload
    labels: dict[str, str] = dataclasses.field(default_factory=dict)
    message: str | None = IMPORT_COMPLETE

    def to_json(self) -> str:
        fields: dict[str, Any] = {
            "scratchSpaceRequired": self.scratch_space_required,
            "preallocationApplied": self.preallocation_applied,
            "deadlinePassed": self.deadline_passed,
            "labels": dict(sorted(self.labels.items())) or None,
            "message": self.message,
        }
        text = json.dumps({k: v for k, v in fields.items() if v is not None}, separators=(",", ":"))
        if len(text.encode()) > MAX_LENGTH:
            raise ValueError(f"Termination message length {len(text)} exceeds maximum length of {MAX_LENGTH}")
        return text


def write(path: Path, message: str) -> None:
    """The first line of ``message`` (newlines become spaces, as CDI writes it), cut to what kubelet keeps."""
    line = message.replace("\n", " ").encode()[:MAX_LENGTH]
    path.write_bytes(line)
