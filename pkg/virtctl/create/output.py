"""Manifests printed the way KubeVirt's virtctl prints them: Go's JSON encoding turned into YAML."""

from __future__ import annotations

from typing import Any

from kubevirt.client import goyaml
from kubevirt_api.base import ApiModel
from kubevirt_api.gojson import to_go_json

__all__ = ["manifest_yaml"]


def manifest_yaml(obj: ApiModel) -> str:
    # sigs.k8s.io/yaml marshals through JSON into a map, so keys come out sorted.
    document: Any = to_go_json(obj)
    return goyaml.dumps(document)
