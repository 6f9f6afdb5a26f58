"""Fixtures for the pod network tests: pods wired like a CNI would (:mod:`kubevirt_testing.pod_netns`)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kubevirt_testing.pod_netns import Topology


@pytest.fixture
def topology(tmp_path: Path) -> Iterator[Topology]:
    made = Topology(tmp_path)
    yield made
    made.close()


@pytest.fixture
def resolv_conf(tmp_path: Path) -> Path:
    path = tmp_path / "resolv.conf"
    path.write_text(
        "search default.svc.cluster.local svc.cluster.local cluster.local\n"
        "nameserver 10.96.0.10\noptions ndots:5\n"
    )
    return path
