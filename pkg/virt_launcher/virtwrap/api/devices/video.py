"""``<video>``: the display adapter."""

from __future__ import annotations

from ..xmlmodel import XMLElement, attr, child, element


@element("model")
class VideoModel(XMLElement):
    type: str | None = attr()
    heads: int | None = attr(as_type=int, go_pointer=True)
    ram: int | None = attr(as_type=int, go_pointer=True)
    vram: int | None = attr(as_type=int, go="VRam", go_pointer=True)
    vgamem: int | None = attr(as_type=int, go="VGAMem", go_pointer=True)


@element("video")
class Video(XMLElement):
    model: VideoModel = child(VideoModel, required=True)
