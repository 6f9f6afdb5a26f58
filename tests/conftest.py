"""Test tiers follow the folder: tests/unit, tests/integration, tests/functional, tests/perf."""

from __future__ import annotations

from pathlib import Path

import pytest

TESTS = Path(__file__).parent
TIERS = ("unit", "integration", "functional")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        relative = Path(str(item.path)).relative_to(TESTS)
        tier = relative.parts[0]
        if tier in TIERS:
            item.add_marker(getattr(pytest.mark, tier))
