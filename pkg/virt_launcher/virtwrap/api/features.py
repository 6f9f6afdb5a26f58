"""``<features>``: ACPI, APIC, Hyper-V enlightenments, KVM hiding and the like."""

from __future__ import annotations

from .xmlmodel import XMLElement, attr, child, element


@element("state")
class FeatureState(XMLElement):
    """A ``state="on|off"`` switch; the tag is given by the field that holds it."""

    state: str | None = attr()


@element("enabled")
class FeatureEnabled(XMLElement):
    """A switch that is on by being present (``<acpi/>``); the tag is given by the field."""


@element("spinlocks")
class FeatureSpinlocks(XMLElement):
    state: str | None = attr()
    retries: int | None = attr(as_type=int, go_pointer=True)


@element("stimer")
class SyNICTimer(XMLElement):
    state: str | None = attr()
    direct: FeatureState | None = child(FeatureState, "direct")


@element("vendor_id")
class FeatureVendorID(XMLElement):
    state: str | None = attr()
    value: str | None = attr()


@element("hyperv")
class FeatureHyperv(XMLElement):
    mode: str | None = attr()
    relaxed: FeatureState | None = child(FeatureState, "relaxed")
    vapic: FeatureState | None = child(FeatureState, "vapic", go="VAPIC")
    spinlocks: FeatureSpinlocks | None = child(FeatureSpinlocks)
    vpindex: FeatureState | None = child(FeatureState, "vpindex", go="VPIndex")
    runtime: FeatureState | None = child(FeatureState, "runtime")
    synic: FeatureState | None = child(FeatureState, "synic", go="SyNIC")
    synic_timer: SyNICTimer | None = child(SyNICTimer, go="SyNICTimer")
    reset: FeatureState | None = child(FeatureState, "reset")
    vendor_id: FeatureVendorID | None = child(FeatureVendorID, go="VendorID")
    frequencies: FeatureState | None = child(FeatureState, "frequencies")
    reenlightenment: FeatureState | None = child(FeatureState, "reenlightenment")
    tlbflush: FeatureState | None = child(FeatureState, "tlbflush", go="TLBFlush")
    ipi: FeatureState | None = child(FeatureState, "ipi", go="IPI")
    evmcs: FeatureState | None = child(FeatureState, "evmcs", go="EVMCS")


@element("kvm")
class FeatureKVM(XMLElement):
    hidden: FeatureState | None = child(FeatureState, "hidden")
    hint_dedicated: FeatureState | None = child(FeatureState, "hint-dedicated")


@element("features")
class Features(XMLElement):
    acpi: FeatureEnabled | None = child(FeatureEnabled, "acpi", go="ACPI")
    apic: FeatureEnabled | None = child(FeatureEnabled, "apic", go="APIC")
    hyperv: FeatureHyperv | None = child(FeatureHyperv)
    smm: FeatureEnabled | None = child(FeatureEnabled, "smm", go="SMM")
    kvm: FeatureKVM | None = child(FeatureKVM, go="KVM")
    pvspinlock: FeatureState | None = child(FeatureState, "pvspinlock", go="PVSpinlock")
    pmu: FeatureState | None = child(FeatureState, "pmu", go="PMU")
    vmport: FeatureState | None = child(FeatureState, "vmport", go="VMPort")
