"""``<rng>``: the virtio entropy source."""

from __future__ import annotations

from ..common import Address
from ..xmlmodel import XMLElement, attr, child, element, text
from .memballoon import IOMMUDriver


@element("backend")
class RngBackend(XMLElement):
    model: str | None = attr()
    source: str | None = text()


@element("rng")
class Rng(XMLElement):
    model: str | None = attr()
    backend: RngBackend | None = child(RngBackend)
    address: Address | None = child(Address)
    driver: IOMMUDriver | None = child(IOMMUDriver)
