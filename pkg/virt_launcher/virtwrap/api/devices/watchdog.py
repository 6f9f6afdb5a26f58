"""``<watchdog>``: the guest watchdog device."""

from __future__ import annotations

from ..common import Address, Alias
from ..xmlmodel import XMLElement, attr, child, element


@element("watchdog")
class Watchdog(XMLElement):
    model: str | None = attr()
    action: str | None = attr()
    alias: Alias | None = child(Alias)
    address: Address | None = child(Address)
