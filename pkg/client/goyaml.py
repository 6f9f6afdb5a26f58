"""YAML written as ``sigs.k8s.io/yaml`` writes it: Go's JSON encoding of a value turned into YAML.

Keys come out sorted (the JSON passes through a map). Strings are written as go-yaml v2 writes them:
multi-line ones as literal blocks (``|-``, cloud-init user data), ones that would read back as another
type (``""``, ``"true"``, ``"1"``, ``"y"``) double-quoted, so that kubectl reads back what was written.
"""

from __future__ import annotations

import re
from typing import Any, Final

import yaml

__all__ = ["dumps"]

_STR_TAG: Final = "tag:yaml.org,2002:str"
_NON_STRING_TAGS: Final = frozenset(
    f"tag:yaml.org,2002:{name}" for name in ("null", "bool", "int", "float", "timestamp", "merge")
)
# Plain scalars go-yaml v2 reads as non-strings where PyYAML's YAML 1.1 resolver does not.
_GO_ONLY_NON_STRINGS: Final = re.compile(r"[yYnN]|[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?")


class _GoYamlDumper(yaml.SafeDumper):
    """PyYAML's safe dumper with go-yaml v2's choice of string styles."""


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


def dumps(document: Any) -> str:
    """``document`` (JSON values: dicts, lists, strings, numbers, booleans, None) as YAML."""
    return yaml.dump(
        document, Dumper=_GoYamlDumper, sort_keys=True, default_flow_style=False, width=1_000_000
    )
