"""A second instance of a component in one process does not fail on metrics the first one serves."""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from kubevirt.monitoring.registration import register_all, unregister_all
from kubevirt.monitoring.virt_handler.version import VersionCollector


def test_a_second_instance_leaves_its_duplicates_out_and_can_unregister_what_it_added() -> None:
    registry = CollectorRegistry()
    first = register_all([VersionCollector()], registry)
    second = register_all([VersionCollector()], registry)
    assert (len(first), second) == (1, [])
    assert registry.get_sample_value("kubevirt_info", None) is None  # labelled: no unlabelled sample
    unregister_all(second, registry)
    unregister_all(first, registry)
    assert list(registry.collect()) == []
