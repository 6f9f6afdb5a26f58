"""Registering a component's collectors in the process's registry, and taking them out again."""

from __future__ import annotations

from collections.abc import Iterable

from prometheus_client import REGISTRY, CollectorRegistry
from prometheus_client.registry import Collector

from kubevirt.log import get_logger

__all__ = ["register_all", "unregister_all"]


def register_all(collectors: Iterable[Collector], registry: CollectorRegistry = REGISTRY) -> list[Collector]:
    """Registers each collector and returns those registered. One whose families are served already (a
    second instance of a component in the same process, as tests run them) is left out with a warning
    rather than failing the component's start."""
    registered = []
    for collector in collectors:
        try:
            registry.register(collector)
        except ValueError as err:  # prometheus_client's duplicated-timeseries refusal
            get_logger().warning("metrics already served in this process", reason=str(err))
            continue
        registered.append(collector)
    return registered


def unregister_all(collectors: Iterable[Collector], registry: CollectorRegistry = REGISTRY) -> None:
    for collector in collectors:
        registry.unregister(collector)
