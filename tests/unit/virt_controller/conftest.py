"""The launcher-pod comparison the conformance README defines, shared by this folder's tests."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pytest

from kubevirt_api.resource import Quantity

# Pod-level fields users and the scheduler see (the README's list), compared exactly.
POD_FIELDS = (
    "nodeSelector",
    "affinity",
    "tolerations",
    "terminationGracePeriodSeconds",
    "hostname",
    "subdomain",
    "serviceAccountName",
    "automountServiceAccountToken",
    "dnsPolicy",
    "dnsConfig",
    "readinessGates",
    "restartPolicy",
    "runtimeClassName",
    "priorityClassName",
    "schedulerName",
    "topologySpreadConstraints",
)
CONTAINER_LISTS = ("volumeMounts", "volumeDevices", "ports")


def _blank(value: Any) -> Any:
    """Absent, null and empty are the same to the API server's defaulting and to a reader."""
    return None if value in (None, {}, [], "") else value


def _resources_by_value(resources: Mapping[str, Any] | None) -> dict[str, dict[str, Quantity]]:
    resources = resources or {}
    return {
        kind: {name: Quantity(str(value)) for name, value in (resources.get(kind) or {}).items()}
        for kind in ("requests", "limits")
    }


def pod_differences(expected: Mapping[str, Any], actual: Mapping[str, Any], launcher_image: str) -> list[str]:
    """Where ``actual`` differs from ``expected`` in what the README judges; empty when they match."""
    found: list[str] = []

    def check(path: str, want: Any, got: Any) -> None:
        if _blank(want) != _blank(got):
            found.append(f"{path}: expected {want!r}, got {got!r}")

    for key in ("labels", "annotations", "ownerReferences"):
        check(f"metadata.{key}", expected["metadata"].get(key), actual["metadata"].get(key))
    want_spec, got_spec = expected["spec"], actual["spec"]
    want_volumes = {v["name"]: v for v in want_spec.get("volumes") or []}
    got_volumes = {v["name"]: v for v in got_spec.get("volumes") or []}
    check("spec.volumes[*].name", sorted(want_volumes), sorted(got_volumes))
    for name in sorted(want_volumes.keys() & got_volumes.keys()):
        check(f"spec.volumes[{name}]", want_volumes[name], got_volumes[name])
    for kind in ("initContainers", "containers"):
        wanted, got = want_spec.get(kind) or [], got_spec.get(kind) or []
        check(f"spec.{kind}[*].name", [c["name"] for c in wanted], [c["name"] for c in got])
        for want_c, got_c in zip(wanted, got, strict=False):
            prefix = f"spec.{kind}[{want_c['name']}]"
            check(f"{prefix}.name", want_c["name"], got_c["name"])
            check(
                f"{prefix}.resources",
                _resources_by_value(want_c.get("resources")),
                _resources_by_value(got_c.get("resources")),
            )
            for key in CONTAINER_LISTS:
                check(f"{prefix}.{key}", want_c.get(key), got_c.get(key))
            if want_c.get("image") != launcher_image:
                check(f"{prefix}.image", want_c.get("image"), got_c.get("image"))
    for key in POD_FIELDS:
        check(f"spec.{key}", want_spec.get(key), got_spec.get(key))
    return found


@pytest.fixture
def compare_pods() -> Callable[[Mapping[str, Any], Mapping[str, Any], str], list[str]]:
    return pod_differences
