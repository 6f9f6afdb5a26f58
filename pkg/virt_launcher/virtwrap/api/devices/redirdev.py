"""``<redirdev>``: USB redirection channels."""

from __future__ import annotations

from ..xmlmodel import XMLElement, attr, child, element


@element("source")
class RedirectedDeviceSource(XMLElement):
    mode: str | None = attr()
    path: str | None = attr()


@element("redirdev")
class RedirectedDevice(XMLElement):
    type: str | None = attr()
    bus: str | None = attr()
    source: RedirectedDeviceSource = child(RedirectedDeviceSource, required=True)
