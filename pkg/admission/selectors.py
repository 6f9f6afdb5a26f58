"""``metav1.LabelSelector`` matching, as replica sets and pools use it for their templates."""

from __future__ import annotations

from collections.abc import Mapping

from kubevirt.admission.json_fields import items, string_map, text
from kubevirt_api.view import JSON


class SelectorError(ValueError):
    """A selector Kubernetes would refuse to convert (``LabelSelectorAsSelector``)."""


def matches(selector: JSON | None, labels: Mapping[str, str]) -> bool:
    """Whether ``labels`` satisfy ``selector``; a missing selector matches nothing, an empty one all."""
    if selector is None:
        return False
    for key, value in string_map(selector, "matchLabels").items():
        if labels.get(key) != value:
            return False
    for expression in items(selector, "matchExpressions"):
        key, operator = text(expression, "key"), text(expression, "operator")
        raw_values = expression.get("values") or []
        values = [str(v) for v in raw_values] if isinstance(raw_values, list) else []
        if operator == "In":
            if not values:
                raise SelectorError("for 'in', 'notin' operators, values set can't be empty")
            if labels.get(key) not in values:
                return False
        elif operator == "NotIn":
            if not values:
                raise SelectorError("for 'in', 'notin' operators, values set can't be empty")
            if key in labels and labels[key] in values:
                return False
        elif operator == "Exists":
            if values:
                raise SelectorError("values set must be empty for exists and does not exist")
            if key not in labels:
                return False
        elif operator == "DoesNotExist":
            if values:
                raise SelectorError("values set must be empty for exists and does not exist")
            if key in labels:
                return False
        else:
            raise SelectorError(f'"{operator}" is not a valid label selector operator')
    return True
