"""Writes the release manifests: manifests/release/kubevirt-operator.yaml and kubevirt-cr.yaml."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from kubevirt.virt_operator.resource.release import kubevirt_cr, operator_manifest

OUT_DIR = Path("manifests/release")


class _NoAliasDumper(yaml.SafeDumper):
    def ignore_aliases(self, data: Any) -> bool:
        return True


def _documents(objects: list[dict[str, Any]]) -> bytes:
    text = "".join(
        "---\n" + yaml.dump(obj, Dumper=_NoAliasDumper, sort_keys=True, default_flow_style=False, width=1000)
        for obj in objects
    )
    return text.encode()


def generate(root: Path) -> dict[Path, bytes]:
    return {
        OUT_DIR / "kubevirt-operator.yaml": _documents(operator_manifest()),
        OUT_DIR / "kubevirt-cr.yaml": _documents([kubevirt_cr()]),
    }
