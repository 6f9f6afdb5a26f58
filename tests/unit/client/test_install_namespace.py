"""Which namespace a component takes as KubeVirt's: a flag, else its pod's, else ``kubevirt``."""

from __future__ import annotations

import pytest

from kubevirt.client import connection, install_namespace


def test_a_flag_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POD_NAMESPACE", "from-pod")
    assert install_namespace("from-flag") == "from-flag"


def test_the_pods_namespace_without_a_flag(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POD_NAMESPACE", "from-pod")
    assert install_namespace() == "from-pod"
    assert install_namespace("") == "from-pod"


def test_kubevirt_outside_a_pod(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("POD_NAMESPACE", raising=False)
    monkeypatch.setattr(connection, "SERVICE_ACCOUNT_NAMESPACE", "/nonexistent/namespace")
    assert install_namespace() == "kubevirt"
