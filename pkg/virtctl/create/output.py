"""Manifests printed the way KubeVirt's virtctl prints them: Go's JSON encoding turned into YAML."""

from __future__ import annotations

from typing import Any

import yaml

from kubevirt_api.base import ApiModel
from kubevirt_api.gojson import to_go_json

__all__ = ["manifest_yaml"]


class _GoYamlDumper(yaml.SafeDumper):
    """Writes multi-line strings as literal blocks (``|-``), as go-yaml does (cloud-init user data)."""


def _string(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_GoYamlDumper.add_representer(str, _string)


def manifest_yaml(obj: ApiModel) -> str:
    # sigs.k8s.io/yaml marshals through JSON into a map, so keys come out sorted.
    document: Any = to_go_json(obj)
    return yaml.dump(
        document, Dumper=_GoYamlDumper, sort_keys=True, default_flow_style=False, width=1_000_000
    )
