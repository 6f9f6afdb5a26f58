"""Hyper-V enlightenments that need another one: switched on for the user when left unset."""

from __future__ import annotations

from kubevirt_api.core.v1 import CPU, CPUFeature, FeatureHyperv, FeatureState, VirtualMachineInstance

VMX_FEATURE = "vmx"
REQUIRE_POLICY = "require"

# (feature, the feature it needs), leaves first, as KubeVirt evaluates them.
_DEPENDENCIES = (
    ("evmcs", "vapic"),
    ("ipi", "vpindex"),
    ("tlbflush", "vpindex"),
    ("synictimer", "synic"),
    ("synic", "vpindex"),
)


def _enabled(state: FeatureState | None) -> bool:
    return state is not None and state.enabled is True


def set_hyperv_feature_dependencies(vmi: VirtualMachineInstance) -> None:
    """Best effort: stop at the first dependency the user disabled, before the vmx requirement of
    an enabled evmcs (validation reports the conflict)."""
    features = vmi.spec.domain.features
    hyperv = features.hyperv if features else None
    if hyperv is None:
        return
    for feature, required in _DEPENDENCIES:
        if not _enabled(_state_of(hyperv, feature)):
            continue
        needed = _state_of(hyperv, required)
        if needed is None or needed.enabled is None:
            setattr(hyperv, required, FeatureState(enabled=True))
        elif needed.enabled is False:
            return
    if hyperv.evmcs is not None and hyperv.evmcs.enabled is not False:
        _require_vmx(vmi)


def _state_of(hyperv: FeatureHyperv, name: str) -> FeatureState | None:
    value = getattr(hyperv, name)
    if name == "synictimer":
        # the timer has more fields than a FeatureState; only its switch matters here
        return None if value is None else FeatureState(enabled=value.enabled)
    state: FeatureState | None = value
    return state


def _require_vmx(vmi: VirtualMachineInstance) -> None:
    domain = vmi.spec.domain
    if domain.cpu is None:
        domain.cpu = CPU()
    features = domain.cpu.features or []
    for feature in features:
        if feature.name == VMX_FEATURE:
            feature.policy = REQUIRE_POLICY
            break
    else:
        features.append(CPUFeature(name=VMX_FEATURE, policy=REQUIRE_POLICY))
    domain.cpu.features = features
