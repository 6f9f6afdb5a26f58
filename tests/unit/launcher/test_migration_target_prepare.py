"""The target launcher's preparation: the domain is checked to convert, and the socket directory the
target libvirt and QEMU listen in exists (the source's proxies forward memory and disks there)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kubevirt.virt_launcher.virtwrap.migration import Migrator
from kubevirt.virt_launcher.virtwrap.vmi import VMIFacts, read_vmi


class PreparingManager:
    def __init__(self) -> None:
        self.prepared: list[str] = []

    def prepare_migration_target(self, facts: VMIFacts, options: Any = None) -> None:
        self.prepared.append(facts.name)


def test_preparing_the_target_makes_the_migration_socket_directory(tmp_path: Path) -> None:
    manager = PreparingManager()
    migrator = Migrator(manager, tmp_path)  # type: ignore[arg-type]
    facts = read_vmi(json.dumps({"metadata": {"name": "vm", "uid": "u-1"}, "spec": {}}).encode())
    migrator.prepare_target(facts)
    migrator.prepare_target(facts)  # again: the directory is kept
    assert manager.prepared == ["vm", "vm"]
    assert (tmp_path / "migrationproxy").is_dir()
