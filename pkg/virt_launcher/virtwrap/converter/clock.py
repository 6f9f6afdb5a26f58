"""``<clock>``: UTC offset or timezone, timers, and the TSC frequency the VMI was scheduled with."""

from __future__ import annotations

from .. import api
from .conversion import Conversion

# VMI timer -> (libvirt timer, has a tick policy, has a track), in the order KubeVirt writes them.
_TIMERS = (
    ("rtc", "rtc", True, True),
    ("pit", "pit", True, False),
    ("kvm", "kvmclock", False, False),
    ("hpet", "hpet", True, False),
    ("hyperv", "hypervclock", False, False),
)


def _present(enabled: bool | None) -> str:
    return "no" if enabled is False else "yes"


def configure_clock(c: Conversion) -> None:
    spec = c.vmi.spec.domain.clock
    clock: api.Clock | None = None
    if spec is not None:
        clock = api.Clock()
        if spec.utc is not None:
            clock.offset = "utc"
            if spec.utc.offset_seconds is not None:
                clock.adjustment = str(spec.utc.offset_seconds)
            else:
                clock.adjustment = "reset"
        elif spec.timezone is not None:
            clock.offset = "timezone"
            clock.timezone = spec.timezone
        timer = spec.timer
        if timer is not None:
            for name, libvirt_name, ticks, tracks in _TIMERS:
                source = getattr(timer, name)
                if source is not None:
                    clock.timers.append(
                        api.Timer(
                            name=libvirt_name,
                            tickpolicy=(source.tick_policy or None) if ticks else None,
                            present=_present(source.present),
                            track=(source.track or None) if tracks else None,
                        )
                    )
    status = c.vmi.status
    hints = status.topology_hints if status else None
    if hints is not None and hints.tsc_frequency is not None and _needs_tsc_frequency(c):
        if clock is None:
            clock = api.Clock()
        clock.timers.append(api.Timer(name="tsc", frequency=str(hints.tsc_frequency)))
    c.domain.clock = clock


def _needs_tsc_frequency(c: Conversion) -> bool:
    """A guest relying on a stable TSC (invtsc required, or Hyper-V re-enlightenment) must get the
    frequency it was scheduled for, so that it can migrate."""
    domain = c.vmi.spec.domain
    if domain.cpu is not None and any(
        f.name == "invtsc" and f.policy == "require" for f in domain.cpu.features or []
    ):
        return True
    hyperv = domain.features.hyperv if domain.features else None
    return bool(hyperv and hyperv.reenlightenment and hyperv.reenlightenment.enabled)
