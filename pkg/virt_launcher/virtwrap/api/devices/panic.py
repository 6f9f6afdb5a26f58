"""``<panic>``: guest panic notifier devices."""

from __future__ import annotations

from ..xmlmodel import XMLElement, attr, element


@element("panic")
class PanicDevice(XMLElement):
    model: str | None = attr(go_pointer=True)
