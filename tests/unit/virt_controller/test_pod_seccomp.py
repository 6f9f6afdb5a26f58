"""The launcher pod's seccomp profile, from the KubeVirt CR's
``seccompConfiguration.virtualMachineInstanceProfile.customProfile``."""

from __future__ import annotations

from typing import Any

import pytest

from kubevirt.virt_config import ClusterConfig, LauncherSettings
from kubevirt.virt_controller.services import TemplateParameters, render_launcher_pod
from kubevirt_api.core.v1 import VirtualMachineInstance

PARAMS = TemplateParameters(launcher_image="launcher:1")


def _vmi(*, root: bool = False) -> VirtualMachineInstance:
    return VirtualMachineInstance.from_dict(
        {
            "metadata": {"name": "vm", "namespace": "ns", "uid": "uid-1"},
            "spec": {"domain": {"devices": {}, "resources": {"requests": {"memory": "1Gi"}}}},
            "status": {} if root else {"runtimeUser": 107},
        }
    )


def _kubevirt(seccomp: Any) -> dict[str, Any]:
    return {"spec": {"configuration": {"seccompConfiguration": seccomp}}}


def _custom(profile: dict[str, Any]) -> dict[str, Any]:
    return _kubevirt({"virtualMachineInstanceProfile": {"customProfile": profile}})


def _pod_context(kubevirt: dict[str, Any], *, root: bool = False) -> dict[str, Any]:
    cluster = ClusterConfig.from_kubevirt(kubevirt)
    pod = render_launcher_pod(_vmi(root=root), cluster, PARAMS, lambda _name: None)
    context: dict[str, Any] = pod["spec"]["securityContext"]
    return context


NON_ROOT = {"runAsUser": 107, "runAsGroup": 107, "runAsNonRoot": True, "fsGroup": 107}


def test_a_localhost_profile_is_the_pods() -> None:
    context = _pod_context(_custom({"localhostProfile": "kubevirt/kubevirt.json"}))
    assert context == {
        **NON_ROOT,
        "seccompProfile": {"type": "Localhost", "localhostProfile": "kubevirt/kubevirt.json"},
    }
    assert list(context)[-1] == "seccompProfile"  # after fsGroup, as Kubernetes writes it


def test_the_runtime_default_profile() -> None:
    context = _pod_context(_custom({"runtimeDefaultProfile": True}))
    assert context == {**NON_ROOT, "seccompProfile": {"type": "RuntimeDefault"}}


def test_a_root_launcher_gets_the_profile_too() -> None:
    context = _pod_context(_custom({"runtimeDefaultProfile": True}), root=True)
    assert context == {"runAsUser": 0, "fsGroup": 107, "seccompProfile": {"type": "RuntimeDefault"}}


def test_a_localhost_profile_wins_over_the_runtime_default() -> None:
    context = _pod_context(_custom({"localhostProfile": "custom.json", "runtimeDefaultProfile": True}))
    assert context["seccompProfile"] == {"type": "Localhost", "localhostProfile": "custom.json"}


def test_an_empty_localhost_path_is_still_a_localhost_profile() -> None:
    """KubeVirt passes on any path it is given, even an empty one (the kubelet then refuses the pod)."""
    context = _pod_context(_custom({"localhostProfile": ""}))
    assert context["seccompProfile"] == {"type": "Localhost", "localhostProfile": ""}


@pytest.mark.parametrize(
    "kubevirt",
    [
        {},
        _kubevirt(None),
        _kubevirt({}),
        _kubevirt({"virtualMachineInstanceProfile": {}}),
        _custom({}),
        _custom({"runtimeDefaultProfile": False}),
        _custom({"localhostProfile": None}),
    ],
    ids=[
        "no-configuration",
        "null",
        "empty",
        "no-custom-profile",
        "empty-custom",
        "runtime-false",
        "null-path",
    ],
)
def test_without_a_custom_profile_the_pod_names_none(kubevirt: dict[str, Any]) -> None:
    assert _pod_context(kubevirt) == NON_ROOT


def test_settings_without_a_kubevirt_cr_name_no_profile() -> None:
    assert LauncherSettings().seccomp_profile is None
