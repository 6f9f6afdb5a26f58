"""``<features>``: ACPI, APIC, SMM, Hyper-V enlightenments, KVM hiding, paravirtual spinlocks, vmport."""

from __future__ import annotations

from kubevirt_api.core.v1 import FeatureHyperv, FeatureState

from ..api import schema as api
from .conversion import Conversion

# VMI hyperv field -> domain field, for the plain on/off enlightenments.
_PLAIN_HYPERV = (
    "relaxed",
    "vapic",
    "vpindex",
    "runtime",
    "synic",
    "reset",
    "frequencies",
    "reenlightenment",
    "tlbflush",
    "ipi",
    "evmcs",
)


def _on_off(enabled: bool | None) -> str:
    return "off" if enabled is False else "on"


def _state(feature: FeatureState | None) -> api.FeatureState | None:
    return None if feature is None else api.FeatureState(state=_on_off(feature.enabled))


def configure_features(c: Conversion) -> None:
    """Only written when the VMI has features (the defaults always give it some)."""
    spec = c.vmi.spec.domain.features
    if spec is None:
        return
    features = api.Features()
    if spec.acpi is None or spec.acpi.enabled is not False:
        features.acpi = api.FeatureEnabled()
    if spec.apic is not None and spec.apic.enabled is not False:
        features.apic = api.FeatureEnabled()
    if spec.smm is not None and spec.smm.enabled is not False:
        features.smm = api.FeatureEnabled()
    if spec.hyperv is not None:
        features.hyperv = _hyperv(spec.hyperv)
    elif spec.hyperv_passthrough is not None and spec.hyperv_passthrough.enabled:
        features.hyperv = api.FeatureHyperv(mode="passthrough")
    if spec.kvm is not None:
        features.kvm = api.FeatureKVM(hidden=api.FeatureState(state="on" if spec.kvm.hidden else "off"))
    features.pvspinlock = _state(spec.pvspinlock)
    if c.context.architecture == "amd64":
        features.vmport = api.FeatureState(state="off")
    c.domain.features = features


def _hyperv(spec: FeatureHyperv) -> api.FeatureHyperv:
    hyperv = api.FeatureHyperv()
    for name in _PLAIN_HYPERV:
        setattr(hyperv, name, _state(getattr(spec, name)))
    if spec.spinlocks is not None:
        hyperv.spinlocks = api.FeatureSpinlocks(
            state=_on_off(spec.spinlocks.enabled), retries=spec.spinlocks.spinlocks
        )
    if spec.synictimer is not None:
        hyperv.synic_timer = api.SyNICTimer(
            state=_on_off(spec.synictimer.enabled), direct=_state(spec.synictimer.direct)
        )
    if spec.vendorid is not None:
        hyperv.vendor_id = api.FeatureVendorID(
            state=_on_off(spec.vendorid.enabled), value=spec.vendorid.vendorid or None
        )
    return hyperv
