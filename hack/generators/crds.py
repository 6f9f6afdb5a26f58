"""Writes one CustomResourceDefinition per KubeVirt kind to manifests/generated/<plural>.<group>.yaml, and
one per cdi.kubevirt.io kind the project serves in CDI's place to manifests/cdi/: beside, not among, the
KubeVirt CRDs, which tools apply wholesale, while virt-operator installs these only on request."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from kubevirt_api.cdi.crds import CDI_CRDS, cdi_custom_resource_definition
from kubevirt_api.crd import CRDS, custom_resource_definition

OUT_DIR = Path("manifests/generated")
CDI_OUT_DIR = Path("manifests/cdi")


class _NoAliasDumper(yaml.SafeDumper):
    """Writes shared sub-objects (the schema of every version) in full instead of as YAML anchors."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def render(crd: dict[str, Any]) -> bytes:
    text = yaml.dump(crd, Dumper=_NoAliasDumper, sort_keys=True, default_flow_style=False, width=1000)
    return ("---\n" + text).encode()


def generate(root: Path) -> dict[Path, bytes]:
    files = {
        OUT_DIR / f"{facts.name}.yaml": render(custom_resource_definition(kind))
        for kind, facts in CRDS.items()
    }
    files.update(
        {
            CDI_OUT_DIR / f"{facts.name}.yaml": render(cdi_custom_resource_definition(kind))
            for kind, facts in CDI_CRDS.items()
        }
    )
    return files
