"""The config follower remembers which KubeVirt CR version is in force; /healthz reports it."""

from __future__ import annotations

from typing import Any

from kubevirt.service.health import ApiServerHealth
from kubevirt.virt_config import ClusterConfig
from kubevirt.virt_config.follower import ConfigFollower


def kubevirt(resource_version: str, gates: list[str], **config: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "kubevirt", "namespace": "kubevirt", "resourceVersion": resource_version},
        "spec": {"configuration": {"developerConfiguration": {"featureGates": gates}, **config}},
    }


def follower() -> tuple[ConfigFollower, list[ClusterConfig]]:
    published: list[ClusterConfig] = [ClusterConfig()]
    follow = ConfigFollower("kubevirt")
    follow.on_change(lambda: published.append(follow.current()))
    return follow, published


def test_the_version_of_each_valid_cr_is_in_force_even_when_the_configuration_is_unchanged() -> None:
    follow, published = follower()
    assert follow.resource_version() == ""
    assert follow.observe(kubevirt("10", ["Snapshot"])) is True
    assert follow.resource_version() == "10"
    assert follow.observe(kubevirt("11", ["Snapshot"])) is False  # e.g. only the status changed
    assert follow.resource_version() == "11"
    assert len(published) == 2


def test_an_invalid_cr_keeps_the_last_valid_version() -> None:
    follow, _ = follower()
    follow.observe(kubevirt("10", ["Snapshot"]))
    assert follow.observe(kubevirt("12", [], obsoleteCPUModels=["EPYC"])) is False
    assert follow.resource_version() == "10"


def test_healthz_reports_the_version_and_remembers_the_api_server_version() -> None:
    calls: list[int] = []
    version = {"rv": "1"}

    def probe() -> dict[str, Any]:
        calls.append(1)
        return {"major": "1", "minor": "32"}

    health = ApiServerHealth(probe, lambda: version["rv"])
    assert health() == (
        200,
        {
            "apiserver": {"connectivity": "ok", "version": {"major": "1", "minor": "32"}},
            "config-resource-version": "1",
        },
    )
    version["rv"] = "2"
    status, body = health()
    assert (status, body["config-resource-version"]) == (200, "2")
    assert len(calls) == 1


def test_healthz_is_500_with_the_reason_while_the_api_server_is_unreachable() -> None:
    def probe() -> dict[str, Any]:
        raise ConnectionRefusedError("connection refused")

    status, body = ApiServerHealth(probe, lambda: "7")()
    assert status == 500
    assert body == {
        "apiserver": {"connectivity": "failed", "error": "connection refused"},
        "config-resource-version": "7",
    }
