"""``<graphics>``: the VNC server on a unix socket."""

from __future__ import annotations

from ..xmlmodel import XMLElement, attr, child, element


@element("listen")
class GraphicsListen(XMLElement):
    type: str | None = attr()
    address: str | None = attr()
    network: str | None = attr()
    socket: str | None = attr()


@element("graphics")
class Graphics(XMLElement):
    autoport: str | None = attr(go="AutoPort")
    default_mode: str | None = attr("defaultMode")
    passwd_valid_to: str | None = attr("passwdValidTo")
    port: int | None = attr(as_type=int)
    tls_port: int | None = attr("tlsPort", as_type=int, go="TLSPort")
    type: str | None = attr()
    listen: GraphicsListen | None = child(GraphicsListen)
