"""``metav1.LabelSelector`` in the two forms controllers need: matching labels and the printed string."""

from __future__ import annotations

from collections.abc import Mapping

from kubevirt.admission.selectors import SelectorError
from kubevirt.admission.selectors import matches as _matches
from kubevirt_api.k8s.meta_v1 import LabelSelector

__all__ = ["SelectorError", "matches", "selector_string"]


def matches(selector: LabelSelector | None, labels: Mapping[str, str] | None) -> bool:
    """Raises :class:`SelectorError` for a selector Kubernetes would refuse."""
    return _matches(selector.to_dict() if selector is not None else None, labels or {})


def selector_string(selector: LabelSelector | None) -> str:
    """The selector as ``labels.Selector.String()`` prints it: requirements sorted by key."""
    if selector is None:
        return ""
    requirements: list[tuple[str, str]] = []
    for key, value in (selector.match_labels or {}).items():
        requirements.append((key, f"{key}={value}"))
    for expression in selector.match_expressions or ():
        key, values = expression.key, ",".join(sorted(expression.values or ()))
        printed = {
            "In": f"{key} in ({values})",
            "NotIn": f"{key} notin ({values})",
            "Exists": key,
            "DoesNotExist": f"!{key}",
        }.get(expression.operator)
        if printed is None:
            raise SelectorError(f'"{expression.operator}" is not a valid label selector operator')
        requirements.append((key, printed))
    return ",".join(text for _, text in sorted(requirements, key=lambda item: item[0]))
