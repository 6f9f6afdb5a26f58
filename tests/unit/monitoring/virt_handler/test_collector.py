"""virt-handler's scrape-time collector: launchers asked concurrently, the slow ones left out, the
families merged across VMIs."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from kubevirt.monitoring.virt_handler.collector import DomainStatsCollector
from kubevirt.monitoring.virt_handler.version import VersionCollector
from kubevirt.version import version_info
from kubevirt_testing.launcher_socket import launcher_socket

NODE = "node-a"


def vmi(name: str, pod: str, node: str = NODE) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}", "labels": {}},
        "status": {"nodeName": node, "activePods": {pod: node}, "phase": "Running"},
    }


def stats(name: str, cpu_ns: int) -> dict[str, Any]:
    return {
        "Name": f"ns_{name}",
        "UUID": "u",
        "Cpu": {"TimeSet": True, "Time": cpu_ns},
        "Memory": {"RSSSet": True, "RSS": 1024},
        "Vcpu": [],
        "Net": [],
        "Block": [],
    }


class FakeLauncher:
    def __init__(self, answer: dict[str, Any] | None, delay: float = 0.0) -> None:
        self.answer = answer
        self.delay = delay
        self.calls = 0
        self.released = threading.Event()

    def get_domain_stats(self) -> dict[str, Any] | None:
        self.calls += 1
        if self.delay:
            self.released.wait(self.delay)
        return self.answer

    def get_filesystems(self) -> list[Any]:
        return []

    def close(self) -> None:
        pass


@pytest.fixture
def pods(tmp_path: Path) -> Iterator[tuple[Path, dict[str, Path]]]:
    with contextlib.ExitStack() as stack:
        sockets = {pod: stack.enter_context(launcher_socket(tmp_path, pod)) for pod in ("pod-1", "pod-2")}
        yield tmp_path, sockets


def collector(
    pods_dir: Path, vmis: list[dict[str, Any]], launchers: dict[Path, FakeLauncher], **kwargs: Any
) -> DomainStatsCollector:
    return DomainStatsCollector(
        vmis=lambda: vmis, node=NODE, pods_dir=pods_dir, connect=lambda path: launchers[path], **kwargs
    )


def scrape(source: DomainStatsCollector) -> CollectorRegistry:
    registry = CollectorRegistry()
    registry.register(source)
    return registry


def test_every_running_vmi_of_the_node_contributes_to_one_family_per_name(
    pods: tuple[Path, dict[str, Path]],
) -> None:
    pods_dir, sockets = pods
    launchers = {sockets["pod-1"]: FakeLauncher(stats("a", 2_000_000_000))}
    launchers[sockets["pod-2"]] = FakeLauncher(stats("b", 500_000_000))
    vmis = [vmi("a", "pod-1"), vmi("b", "pod-2"), vmi("elsewhere", "pod-2", node="node-b")]
    registry = scrape(collector(pods_dir, vmis, launchers))

    value = registry.get_sample_value
    labels = {"node": NODE, "namespace": "ns"}
    assert value("kubevirt_vmi_cpu_usage_seconds_total", {**labels, "name": "a"}) == 2.0
    assert value("kubevirt_vmi_cpu_usage_seconds_total", {**labels, "name": "b"}) == 0.5
    assert value("kubevirt_vmi_cpu_usage_seconds_total", {**labels, "name": "elsewhere"}) is None
    text = generate_latest(registry).decode()
    assert text.count("# TYPE kubevirt_vmi_cpu_usage_seconds_total counter") == 1


def test_a_hung_launcher_leaves_its_vmi_out_and_the_scrape_on_time(
    pods: tuple[Path, dict[str, Path]],
) -> None:
    pods_dir, sockets = pods
    hung = FakeLauncher(stats("a", 1), delay=30)
    launchers = {sockets["pod-1"]: hung, sockets["pod-2"]: FakeLauncher(stats("b", 3_000_000_000))}
    source = collector(pods_dir, [vmi("a", "pod-1"), vmi("b", "pod-2")], launchers, timeout=0.5)
    try:
        started = time.monotonic()
        registry = scrape(source)
        first = registry.get_sample_value
        assert first("kubevirt_vmi_cpu_usage_seconds_total", {"node": NODE, "namespace": "ns", "name": "b"})
        assert (
            first("kubevirt_vmi_cpu_usage_seconds_total", {"node": NODE, "namespace": "ns", "name": "a"})
            is None
        )
        assert time.monotonic() - started < 5
    finally:
        hung.released.set()
        source.close()


def test_a_launcher_still_busy_from_earlier_scrapes_is_not_asked_again(
    pods: tuple[Path, dict[str, Path]],
) -> None:
    pods_dir, sockets = pods
    hung = FakeLauncher(stats("a", 1), delay=30)
    source = collector(
        pods_dir, [vmi("a", "pod-1")], {sockets["pod-1"]: hung}, timeout=0.2, max_requests_per_launcher=1
    )
    try:
        list(source.collect())
        list(source.collect())
        assert hung.calls == 1
    finally:
        hung.released.set()
        source.close()


def test_a_domain_going_away_and_a_failing_launcher_give_no_series(
    pods: tuple[Path, dict[str, Path]],
) -> None:
    pods_dir, sockets = pods

    class Broken(FakeLauncher):
        def get_domain_stats(self) -> dict[str, Any] | None:
            raise RuntimeError("launcher gone")

    launchers = {sockets["pod-1"]: FakeLauncher(None), sockets["pod-2"]: Broken(None)}
    source = collector(pods_dir, [vmi("a", "pod-1"), vmi("b", "pod-2")], launchers)
    assert list(source.collect()) == []


def test_kubevirt_info_names_the_build() -> None:
    registry = CollectorRegistry()
    registry.register(VersionCollector())
    info = version_info()
    labels = {"goversion": info["goVersion"], "kubeversion": info["gitVersion"]}
    assert registry.get_sample_value("kubevirt_info", labels) == 1.0
