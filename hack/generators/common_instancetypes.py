"""Writes the common instance types and preferences virt-operator installs to
manifests/common-instancetypes/: beside, not among, the CRDs in manifests/generated/, which are applied
before any object of their kinds can be."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from kubevirt.virt_operator.resource.common_instancetypes import cluster_instancetypes, cluster_preferences

OUT_DIR = Path("manifests/common-instancetypes")


def _bundle(objects: list[dict[str, Any]]) -> bytes:
    documents = [yaml.safe_dump(obj, sort_keys=True, default_flow_style=False, width=1000) for obj in objects]
    return "".join(f"---\n{document}" for document in documents).encode()


def generate(root: Path) -> dict[Path, bytes]:
    return {
        OUT_DIR / "common-clusterinstancetypes-bundle.yaml": _bundle(cluster_instancetypes()),
        OUT_DIR / "common-clusterpreferences-bundle.yaml": _bundle(cluster_preferences()),
    }
