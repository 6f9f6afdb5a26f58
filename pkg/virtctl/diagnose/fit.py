"""Can any node ever hold a pod? Its requests against every node's allocatable resources (the
``devices.kubevirt.io/*`` device-plugin resources included) and its nodeSelector against node labels.

This is the part of the scheduler's answer that needs no knowledge of what else runs on a node: a
request larger than every node's allocatable amount, or a selector no node carries, never fits.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kubevirt_api.resource import Quantity, QuantityError

__all__ = ["Fit", "fit", "pod_requests"]


@dataclass(frozen=True)
class Fit:
    """Resources no node can hold (resource → what is asked and the most any node offers), the
    nodeSelector terms no node carries, and whether some node has everything at once."""

    nodes: int
    short: dict[str, dict[str, str]] = field(default_factory=dict)
    unmatched_selector: dict[str, str] = field(default_factory=dict)
    one_node_has_all: bool = False

    @property
    def fits_somewhere(self) -> bool:
        return self.one_node_has_all

    def sentence(self) -> str:
        if self.nodes == 0:
            return "there is no node it may run on"
        if not self.short and not self.unmatched_selector:
            return "no single node both carries its nodeSelector and holds all its requests"
        parts = [
            f"{resource} {amounts['requested']} requested but no node offers more than {amounts['largest']}"
            for resource, amounts in sorted(self.short.items())
        ]
        if self.unmatched_selector:
            terms = ", ".join(f"{key}={value}" for key, value in sorted(self.unmatched_selector.items()))
            parts.append(f"no node carries the nodeSelector {terms}")
        return "; ".join(parts)


def _quantity(value: Any) -> Quantity | None:
    try:
        return Quantity(str(value))
    except QuantityError:
        return None


def _container_requests(container: Mapping[str, Any]) -> dict[str, Quantity]:
    """A container's requests; a resource with only a limit is requested at its limit (the API
    server's defaulting does the same)."""
    resources = container.get("resources") or {}
    merged = {**(resources.get("limits") or {}), **(resources.get("requests") or {})}
    parsed = {name: _quantity(value) for name, value in merged.items()}
    return {name: quantity for name, quantity in parsed.items() if quantity is not None}


def pod_requests(pod: Mapping[str, Any]) -> dict[str, Quantity]:
    """The pod's effective requests: the containers' sum or the largest init container, whichever is
    larger, plus the pod overhead."""
    spec = pod.get("spec") or {}
    total: dict[str, Quantity] = {}
    for container in spec.get("containers") or ():
        for name, quantity in _container_requests(container).items():
            total[name] = total[name] + quantity if name in total else quantity
    for container in spec.get("initContainers") or ():
        for name, quantity in _container_requests(container).items():
            if name not in total or quantity > total[name]:
                total[name] = quantity
    for name, value in (spec.get("overhead") or {}).items():
        extra = _quantity(value)
        if extra is not None:
            total[name] = total[name] + extra if name in total else extra
    return {name: quantity for name, quantity in total.items() if quantity.sign() > 0}


def _allocatable(node: Mapping[str, Any]) -> dict[str, Quantity]:
    status = node.get("status") or {}
    offered = status.get("allocatable") or status.get("capacity") or {}
    parsed = {name: _quantity(value) for name, value in offered.items()}
    return {name: quantity for name, quantity in parsed.items() if quantity is not None}


def _name(node: Mapping[str, Any]) -> str:
    return str((node.get("metadata") or {}).get("name") or "")


def fit(pod: Mapping[str, Any], nodes: Iterable[Mapping[str, Any]], *, excluded: Sequence[str] = ()) -> Fit:
    """Whether any node (other than ``excluded``) could ever hold ``pod``."""
    candidates = [node for node in nodes if _name(node) not in excluded]
    if not candidates:
        return Fit(nodes=0)
    requests = pod_requests(pod)
    offers = [_allocatable(node) for node in candidates]
    short: dict[str, dict[str, str]] = {}
    for resource, requested in requests.items():
        largest = max((offer.get(resource, Quantity("0")) for offer in offers), default=Quantity("0"))
        if requested > largest:
            short[resource] = {"requested": str(requested), "largest": str(largest)}
    selector = (pod.get("spec") or {}).get("nodeSelector") or {}
    labels = [(node.get("metadata") or {}).get("labels") or {} for node in candidates]
    unmatched = {
        key: value for key, value in selector.items() if not any(found.get(key) == value for found in labels)
    }
    one_has_all = any(
        all(found.get(key) == value for key, value in selector.items())
        and all(offer.get(resource, Quantity("0")) >= requested for resource, requested in requests.items())
        for found, offer in zip(labels, offers, strict=True)
    )
    return Fit(nodes=len(candidates), short=short, unmatched_selector=unmatched, one_node_has_all=one_has_all)
