"""What the virt-controller metrics tests share: reading a collector's samples as a scrape would."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from prometheus_client.registry import Collector

# (sample name, labels, value) in the order the collector yields them.
Scraped = list[tuple[str, dict[str, str], float]]


def _scrape(collector: Collector) -> Scraped:
    return [(s.name, dict(s.labels), s.value) for family in collector.collect() for s in family.samples]


@pytest.fixture
def scrape() -> Callable[[Collector], Scraped]:
    return _scrape
