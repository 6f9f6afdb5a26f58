"""``<clock>``: the guest clock offset and its timers."""

from __future__ import annotations

from .xmlmodel import XMLElement, attr, children, element


@element("timer")
class Timer(XMLElement):
    name: str | None = attr()
    tickpolicy: str | None = attr(go="TickPolicy")
    present: str | None = attr()
    track: str | None = attr()
    frequency: str | None = attr()


@element("clock")
class Clock(XMLElement):
    offset: str | None = attr()
    timezone: str | None = attr()
    adjustment: str | None = attr()
    timers: list[Timer] = children(Timer, go="Timer")
