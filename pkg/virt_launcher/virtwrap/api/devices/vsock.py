"""``<vsock>``: the virtio socket device and its context ID."""

from __future__ import annotations

from ..xmlmodel import XMLElement, attr, child, element


@element("cid")
class CID(XMLElement):
    auto: str | None = attr()
    address: int | None = attr(as_type=int)


@element("vsock")
class VSOCK(XMLElement):
    model: str | None = attr()
    cid: CID = child(CID, required=True, go="CID")
