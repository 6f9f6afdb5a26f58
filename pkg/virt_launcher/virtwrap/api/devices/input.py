"""``<input>``: tablets and other input devices."""

from __future__ import annotations

from ..common import Address, Alias
from ..xmlmodel import XMLElement, attr, child, element


@element("input")
class Input(XMLElement):
    type: str | None = attr()
    bus: str | None = attr()
    model: str | None = attr()
    alias: Alias | None = child(Alias)
    address: Address | None = child(Address)
