"""Writes one CustomResourceDefinition per KubeVirt kind to manifests/generated/<plural>.<group>.yaml."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from kubevirt_api.crd import CRDS, custom_resource_definition

OUT_DIR = Path("manifests/generated")


class _NoAliasDumper(yaml.SafeDumper):
    """Writes shared sub-objects (the schema of every version) in full instead of as YAML anchors."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def render(kind: str) -> bytes:
    text = yaml.dump(
        custom_resource_definition(kind),
        Dumper=_NoAliasDumper,
        sort_keys=True,
        default_flow_style=False,
        width=1000,
    )
    return ("---\n" + text).encode()


def generate(root: Path) -> dict[Path, bytes]:
    return {OUT_DIR / f"{facts.name}.yaml": render(kind) for kind, facts in CRDS.items()}
