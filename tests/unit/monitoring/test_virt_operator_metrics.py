"""virt-operator's metrics: KubeVirt's names and help texts, the emulation gauge exposed only once leading,
and the operator setting them as it leads, stops leading and follows the configuration."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from kubevirt.client import KubeClient
from kubevirt.client.connection import Connection
from kubevirt.monitoring import virt_operator as metrics
from kubevirt.virt_operator.app import Options, VirtOperator

LEADING = "kubevirt_virt_operator_leading_status"
READY = "kubevirt_virt_operator_ready_status"
EMULATION = "kubevirt_configuration_emulation_enabled"


def _reset() -> None:
    for setter in (metrics.set_leading, metrics.set_ready, metrics.set_emulation):
        setter(False)


@pytest.fixture
def registry() -> Iterator[CollectorRegistry]:
    # The gauges are the process's, and an operator run in this process earlier may have set them.
    _reset()
    registry = CollectorRegistry()
    yield registry
    _reset()  # and leave them as a fresh operator has them


def test_the_families_are_kubevirts() -> None:
    assert metrics.metric_descriptions() == [
        (LEADING, "Gauge", "Indication for an operating virt-operator."),
        (READY, "Gauge", "Indication for a virt-operator that is ready to take the lead."),
        (EMULATION, "Gauge", "Indicates whether the Software Emulation is enabled in the configuration."),
    ]


def test_emulation_is_exposed_only_once_leader_metrics_are_registered(registry: CollectorRegistry) -> None:
    metrics.register(registry)
    metrics.register(registry)  # a second start is harmless
    text = generate_latest(registry).decode()
    assert f"# HELP {LEADING} Indication for an operating virt-operator.\n# TYPE {LEADING} gauge\n" in text
    assert f"{LEADING} 0.0\n" in text
    assert f"{READY} 0.0\n" in text
    assert EMULATION not in text
    metrics.register_leader_metrics(registry)
    metrics.register_leader_metrics(registry)
    assert registry.get_sample_value(EMULATION) == 0.0


def test_setters_flip_the_gauges(registry: CollectorRegistry) -> None:
    metrics.register(registry)
    metrics.register_leader_metrics(registry)
    metrics.set_leading(True)
    metrics.set_ready(True)
    metrics.set_emulation(True)
    assert [registry.get_sample_value(name) for name in (LEADING, READY, EMULATION)] == [1.0, 1.0, 1.0]
    metrics.set_leading(False)
    metrics.set_emulation(False)
    assert [registry.get_sample_value(name) for name in (LEADING, READY, EMULATION)] == [0.0, 1.0, 0.0]


class _Configuration:
    def auth_settings(self) -> dict[str, Any]:
        return {}

    def get_basic_auth_token(self) -> None:
        return None


class _Response:
    status = 404
    data = json.dumps({"kind": "Status", "code": 404, "reason": "NotFound"}).encode()

    def release_conn(self) -> None:
        pass


class _NothingThere:
    """A connection pool standing in for an API server that has nothing."""

    def request(self, _method: str, _url: str, **_kwargs: Any) -> _Response:
        return _Response()


class _Informers:
    """The leader's informer factory, whose caches never sync: leading then stops at once."""

    def start(self) -> None:
        pass

    def wait_for_cache_sync(self, _timeout: float) -> bool:
        return False

    def stop(self) -> None:
        pass


def _operator(monkeypatch: pytest.MonkeyPatch) -> VirtOperator:
    api = KubeClient(Connection("https://api.test", _NothingThere(), _Configuration()))  # type: ignore[arg-type]
    operator = VirtOperator(api, Options(namespace="kubevirt", operator_image="reg.test/virt-operator:v1"))
    monkeypatch.setattr(operator, "_factory", _Informers())
    return operator


def _kubevirt(use_emulation: bool, version: str) -> dict[str, Any]:
    return {
        "apiVersion": "kubevirt.io/v1",
        "kind": "KubeVirt",
        "metadata": {"name": "kubevirt", "namespace": "kubevirt", "resourceVersion": version},
        "spec": {"configuration": {"developerConfiguration": {"useEmulation": use_emulation}}},
    }


def test_the_operator_reports_leading_and_then_losing_the_lease(
    registry: CollectorRegistry, monkeypatch: pytest.MonkeyPatch
) -> None:
    metrics.register(registry)
    metrics.register_leader_metrics(registry)
    operator = _operator(monkeypatch)
    operator._start_leading()
    assert registry.get_sample_value(LEADING) == 1.0
    operator._stop_leading()
    assert registry.get_sample_value(LEADING) == 0.0


def test_the_operator_follows_use_emulation_in_the_configuration(
    registry: CollectorRegistry, monkeypatch: pytest.MonkeyPatch
) -> None:
    metrics.register_leader_metrics(registry)
    operator = _operator(monkeypatch)
    operator._config.observe(_kubevirt(True, "1"))
    assert registry.get_sample_value(EMULATION) == 1.0
    operator._config.observe(_kubevirt(False, "2"))
    assert registry.get_sample_value(EMULATION) == 0.0
