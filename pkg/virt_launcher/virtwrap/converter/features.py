"""``<features>``: ACPI, APIC, SMM, Hyper-V enlightenments, KVM hiding, paravirtual spinlocks, vmport."""

from __future__ import annotations

from kubevirt_api.core.v1 import FeatureHyperv, FeatureState

from .. import api
from .conversion import Conversion


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
    spinlocks = spec.spinlocks
    timer = spec.synictimer
    vendor = spec.vendorid
    return api.FeatureHyperv(
        relaxed=_state(spec.relaxed),
        vapic=_state(spec.vapic),
        spinlocks=None
        if spinlocks is None
        else api.FeatureSpinlocks(state=_on_off(spinlocks.enabled), retries=spinlocks.spinlocks),
        vpindex=_state(spec.vpindex),
        runtime=_state(spec.runtime),
        synic=_state(spec.synic),
        synic_timer=None
        if timer is None
        else api.SyNICTimer(state=_on_off(timer.enabled), direct=_state(timer.direct)),
        reset=_state(spec.reset),
        vendor_id=None
        if vendor is None
        else api.FeatureVendorID(state=_on_off(vendor.enabled), value=vendor.vendorid or None),
        frequencies=_state(spec.frequencies),
        reenlightenment=_state(spec.reenlightenment),
        tlbflush=_state(spec.tlbflush),
        ipi=_state(spec.ipi),
        evmcs=_state(spec.evmcs),
    )
