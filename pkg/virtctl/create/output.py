"""Manifests printed the way KubeVirt's virtctl prints them: Go's JSON encoding turned into YAML."""

from __future__ import annotations

import re
from typing import Any, Final

import yaml

from kubevirt_api.base import ApiModel
from kubevirt_api.gojson import to_go_json

__all__ = ["manifest_yaml"]


_STR_TAG: Final = "tag:yaml.org,2002:str"
_NON_STRING_TAGS: Final = frozenset(
    f"tag:yaml.org,2002:{name}" for name in ("null", "bool", "int", "float", "timestamp", "merge")
)
# Plain scalars go-yaml v2 reads as non-strings where PyYAML's YAML 1.1 resolver does not.
_GO_ONLY_NON_STRINGS: Final = re.compile(r"[yYnN]|[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?")


class _GoYamlDumper(yaml.SafeDumper):
    """Writes strings as go-yaml v2 does: multi-line ones as literal blocks (``|-``, cloud-init user data),
    ones that would read back as another type (``""``, ``"true"``, ``"1"``) double-quoted."""


def _reads_as_non_string(dumper: yaml.SafeDumper, value: str) -> bool:
    tag = dumper.resolve(yaml.ScalarNode, value, (True, False))  # type: ignore[no-untyped-call]
    return tag in _NON_STRING_TAGS or _GO_ONLY_NON_STRINGS.fullmatch(value) is not None


def _string(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    style: str | None = None
    if "\n" in value:
        style = "|"
    elif _reads_as_non_string(dumper, value):
        style = '"'
    return dumper.represent_scalar(_STR_TAG, value, style=style)


_GoYamlDumper.add_representer(str, _string)


def manifest_yaml(obj: ApiModel) -> str:
    # sigs.k8s.io/yaml marshals through JSON into a map, so keys come out sorted.
    document: Any = to_go_json(obj)
    return yaml.dump(
        document, Dumper=_GoYamlDumper, sort_keys=True, default_flow_style=False, width=1_000_000
    )
