"""Hypothesis strategies for hostile input, shared by the property and fuzz tests.

Most generated objects start from a conformance case and carry a few random edits (values replaced,
keys dropped or added, types changed, integers out of range, deep nesting), so they get past the first
checks and reach the code behind them; the rest are arbitrary JSON, YAML or bytes.

``FUZZ_EXAMPLES`` (environment variable ``KUBEVIRT_FUZZ_EXAMPLES``) sets how many examples each fuzz test
runs: a few in the normal test run, many more under ``hack/fuzz``.
"""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

CONFORMANCE = Path(__file__).parents[2] / "testdata" / "conformance"
FUZZ_EXAMPLES = int(os.environ.get("KUBEVIRT_FUZZ_EXAMPLES", "25"))
# The settings of every fuzz test: no deadline (the machine is shared), no example database.
FUZZ_SETTINGS = settings(
    max_examples=FUZZ_EXAMPLES,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def _load_cases(pattern: str) -> list[Any]:
    return [
        json.loads(path.read_text())
        for path in sorted(CONFORMANCE.glob(pattern))
        if path.name.count(".") == 1
    ]


VMI_SEEDS = _load_cases("vmi/*/*.json")
VM_SEEDS = _load_cases("vm/*.json")

# Edges of Go's integer types, and what lies just beyond them.
_EDGES = [0, -1, 1, 2**31 - 1, 2**31, -(2**31) - 1, 2**32 - 1, 2**32, 2**63 - 1, 2**63, 2**64, -(2**63) - 1]
integers = st.one_of(st.integers(min_value=-(2**70), max_value=2**70), st.sampled_from(_EDGES))
scalars = st.one_of(
    st.none(),
    st.booleans(),
    integers,
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(["", "1Gi", "-1", "512Ki", "virtio", "sata", "ide", "Paused", "pod", "q35", "../x"]),
    st.integers(min_value=1000, max_value=5000).map(lambda length: "x" * length),
    st.text(max_size=20),
)
json_values = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(st.text(max_size=12), children, max_size=4)
    ),
    max_leaves=12,
)
# Values of the same JSON type as the one they replace, so most edits get past the schema check.
same_type: dict[type, st.SearchStrategy[Any]] = {
    bool: st.booleans(),
    int: integers,
    float: st.floats(allow_nan=False, allow_infinity=False),
    str: st.sampled_from(
        [
            *("", "0", "1Gi", "-1", "3Mi", "100m", "virtio", "sata", "scsi", "usb", "ide", "pod", "Paused"),
            *("q35", "pc-i440fx", "host-model", "require", "nonsense", "02:00:00:00:00:00", "a..b", "/"),
        ]
    ),
}


def nested(levels: int) -> Any:
    """``levels`` lists inside one another."""
    value: Any = []
    for _ in range(levels - 1):
        value = [value]
    return value


def _containers(document: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Paths of every dict and list inside ``document``."""
    found = []
    if isinstance(document, dict):
        found.append(path)
        for key, value in document.items():
            found.extend(_containers(value, (*path, key)))
    elif isinstance(document, list):
        found.append(path)
        for index, value in enumerate(document):
            found.extend(_containers(value, (*path, index)))
    return found


def _at(document: Any, path: tuple[Any, ...]) -> Any:
    for step in path:
        document = document[step]
    return document


@st.composite
def mutated(draw: st.DrawFn, seeds: list[Any], *, deep: bool = False) -> Any:
    """A seed object with a few random edits; with ``deep``, sometimes a value nested far too deeply."""
    document = copy.deepcopy(draw(st.sampled_from(seeds)))
    for _ in range(draw(st.integers(min_value=1, max_value=4))):
        target = _at(document, draw(st.sampled_from(_containers(document))))
        if isinstance(target, dict) and target:
            key = draw(st.sampled_from(sorted(target, key=str)))
            action = draw(st.sampled_from(["tweak", "tweak", "replace", "drop", "add", "deep"]))
            if action == "tweak" and type(target[key]) in same_type:
                target[key] = draw(same_type[type(target[key])])
            elif action == "replace":
                target[key] = draw(json_values)
            elif action == "drop":
                del target[key]
            elif action == "deep" and deep:
                target[key] = nested(draw(st.sampled_from([50, 99, 101, 500, 900])))
            else:
                target[draw(st.sampled_from([*sorted(target, key=str), "bootOrder", "bus", "pod", "x"]))] = (
                    draw(json_values)
                )
        elif isinstance(target, list) and target:
            index = draw(st.integers(min_value=0, max_value=len(target) - 1))
            if draw(st.booleans()):
                target.append(copy.deepcopy(target[index]))
            else:
                target[index] = draw(json_values)
        elif isinstance(target, list):
            target.append(draw(json_values))
    return document


def _dump(document: Any, style: str) -> str:
    if style == "yaml":
        try:
            return yaml.safe_dump(document)
        except RecursionError:  # the YAML writer cannot nest as deep as the JSON one
            pass
    return json.dumps(document)


@st.composite
def manifest_texts(draw: st.DrawFn) -> str:
    """What a user might pass to ``-f``: an edited VMI or VM as JSON or YAML, or anything at all."""
    kind = draw(st.sampled_from(["vmi", "vmi", "vm", "json", "text"]))
    if kind == "text":
        return draw(
            st.one_of(st.text(max_size=200), st.sampled_from(["a: &x [*x]", "{", "[" * 5000, "- - -"]))
        )
    if kind == "json":
        return json.dumps(draw(json_values))
    document = draw(mutated(VMI_SEEDS if kind == "vmi" else VM_SEEDS, deep=True))
    return _dump(document, draw(st.sampled_from(["json", "yaml"])))
