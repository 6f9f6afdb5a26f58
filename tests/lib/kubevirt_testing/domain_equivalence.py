"""Semantic comparison of two domain XML documents (as libvirt would read them).

Text is compared stripped, attributes as sets, and children grouped by tag: the order between different
tags does not matter, the order among siblings with the same tag does (disk order, CPU feature order).
Callers may allow some elements to be left out when the expected document has them empty, and some
attributes to be left out altogether.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from lxml import etree

# Empty elements that libvirt's schema rejects or ignores; KubeVirt writes them, we may leave them out.
LIBVIRT_IGNORED_EMPTY = frozenset(
    {
        ("sysinfo", "bios"),
        ("sysinfo", "baseBoard"),
        ("sysinfo", "chassis"),
        ("interface", "source"),
        ("{http://kubevirt.io}kubevirt", "{http://kubevirt.io}uid"),
    }
)


def _local(tag: str) -> str:
    return tag.rpartition("}")[2]


def _is_empty(el: Any) -> bool:
    return not el.attrib and len(el) == 0 and not (el.text or "").strip()


def _block_source_name(parent_tag: str, el: Any) -> bool:
    return el.tag == "source" and parent_tag in ("disk", "backingStore") and el.get("dev") is not None


def domain_differences(
    expected: str | bytes,
    actual: str | bytes,
    *,
    omittable: Collection[tuple[str, str]] = LIBVIRT_IGNORED_EMPTY,
    omit_block_source_name: bool = True,
) -> list[str]:
    """Return human-readable differences (empty when the documents are equivalent)."""
    parser = etree.XMLParser(remove_blank_text=True)
    exp = etree.fromstring(expected.encode() if isinstance(expected, str) else expected, parser)
    act = etree.fromstring(actual.encode() if isinstance(actual, str) else actual, parser)
    diffs: list[str] = []
    if exp.tag != act.tag:
        return [f"root: <{exp.tag}> != <{act.tag}>"]
    _compare(exp, act, "/" + _local(exp.tag), "", diffs, omittable, omit_block_source_name)
    return diffs


def _compare(
    exp: Any,
    act: Any,
    path: str,
    parent_tag: str,
    diffs: list[str],
    omittable: Collection[tuple[str, str]],
    omit_block_source_name: bool,
) -> None:
    exp_attrs = dict(exp.attrib)
    act_attrs = dict(act.attrib)
    if omit_block_source_name and _block_source_name(parent_tag, exp) and "name" not in act_attrs:
        exp_attrs.pop("name", None)
    if exp_attrs != act_attrs:
        diffs.append(f"{path}: attributes {exp_attrs} != {act_attrs}")
    exp_text = (exp.text or "").strip()
    act_text = (act.text or "").strip()
    if exp_text != act_text:
        diffs.append(f"{path}: text {exp_text!r} != {act_text!r}")
    exp_groups = _group(exp)
    act_groups = _group(act)
    for tag in sorted(set(exp_groups) | set(act_groups)):
        exp_items = exp_groups.get(tag, [])
        act_items = act_groups.get(tag, [])
        if not act_items and (exp.tag, tag) in omittable and all(_is_empty(e) for e in exp_items):
            continue
        if len(exp_items) != len(act_items):
            diffs.append(f"{path}/{_local(tag)}: {len(exp_items)} expected, {len(act_items)} found")
            continue
        for index, (e, a) in enumerate(zip(exp_items, act_items, strict=True)):
            suffix = f"[{index}]" if len(exp_items) > 1 else ""
            _compare(e, a, f"{path}/{_local(tag)}{suffix}", exp.tag, diffs, omittable, omit_block_source_name)


def _group(el: Any) -> dict[str, list[Any]]:
    groups: dict[str, list[Any]] = {}
    for sub in el:
        if isinstance(sub.tag, str):
            groups.setdefault(sub.tag, []).append(sub)
    return groups
