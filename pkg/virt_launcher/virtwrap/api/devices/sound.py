"""``<sound>``: the sound card."""

from __future__ import annotations

from ..common import Alias
from ..xmlmodel import XMLElement, attr, child, element


@element("sound")
class SoundCard(XMLElement):
    model: str | None = attr()
    alias: Alias | None = child(Alias)
