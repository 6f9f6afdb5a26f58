"""What virt-handler put into each VMI's launcher pod, kept on the node across its restarts.

One JSON file per VMI UID in KubeVirt's ``hotplug-volume-mount-state`` directory, written before a mount
point or device node is made (so a handler that dies in between still removes it) and updated once the
device number and the cgroup rule are known. Unlike KubeVirt's, entries name targets relative to the
launcher pod's ``hotplug-disks`` volume (reopened from the pods directory without following links), and
say what the block device cgroup rule was.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kubevirt.virt_handler.hotplug_disk.layout import HotplugVolumeError, check_name, target_name

FILE = "file"
BLOCK = "block"


@dataclass
class Entry:
    volume: str
    kind: str  # FILE: <volume>.img bind-mounted; BLOCK: the device node <volume>
    cgroup: str = ""  # the launcher container's devices cgroup (BLOCK)
    device: str = ""  # MAJOR:MINOR once the node is made (BLOCK)
    preexisting: bool = False  # the cgroup allowed the device already: its rule is not ours to remove

    @property
    def block(self) -> bool:
        return self.kind == BLOCK


@dataclass
class Record:
    namespace: str
    name: str
    pod_uid: str  # the launcher pod the targets are in
    entries: dict[str, Entry] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "namespace": self.namespace,
            "name": self.name,
            "podUID": self.pod_uid,
            "mountTargetEntries": [
                {"targetFile": target_name(entry.volume, block=entry.block), **asdict(entry)}
                for entry in self.entries.values()
            ],
        }

    @classmethod
    def from_json(cls, data: Any) -> Record:
        if not isinstance(data, dict):
            raise ValueError("not an object")
        entries = {}
        for item in data.get("mountTargetEntries") or []:
            entry = Entry(
                volume=check_name(str(item["volume"]), "volume name"),
                kind=BLOCK if item.get("kind") == BLOCK else FILE,
                cgroup=str(item.get("cgroup") or ""),
                device=str(item.get("device") or ""),
                preexisting=bool(item.get("preexisting")),
            )
            entries[entry.volume] = entry
        return cls(
            namespace=str(data.get("namespace") or ""),
            name=str(data.get("name") or ""),
            pod_uid=check_name(str(data.get("podUID") or ""), "pod UID"),
            entries=entries,
        )


class RecordStore:
    """The records in one directory, one file per VMI UID (KubeVirt's checkpoint names)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def _path(self, vmi_uid: str) -> Path:
        return self.directory / check_name(vmi_uid, "VMI UID")

    def load(self, vmi_uid: str) -> Record | None:
        try:
            text = self._path(vmi_uid).read_text()
        except FileNotFoundError:
            return None
        except OSError as err:
            raise HotplugVolumeError(f"the hotplug mount record of {vmi_uid} cannot be read: {err}") from None
        try:
            return Record.from_json(json.loads(text))
        except (ValueError, KeyError, TypeError, HotplugVolumeError) as err:
            raise HotplugVolumeError(f"the hotplug mount record of {vmi_uid} is malformed: {err}") from None

    def save(self, vmi_uid: str, record: Record) -> None:
        """Writes the record atomically; a record without entries is removed."""
        path = self._path(vmi_uid)
        if not record.entries:
            path.unlink(missing_ok=True)
            return
        self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        partial = path.with_name(f".{path.name}.partial")
        partial.write_text(json.dumps(record.to_json()))
        os.replace(partial, path)

    def all(self) -> dict[str, Record]:
        """Every readable record by VMI UID (one that cannot be read is left for a look by hand)."""
        found: dict[str, Record] = {}
        if not self.directory.is_dir():
            return found
        for path in sorted(self.directory.iterdir()):
            if path.name.startswith("."):
                continue
            try:
                record = self.load(path.name)
            except HotplugVolumeError:
                continue
            if record is not None:
                found[path.name] = record
        return found
