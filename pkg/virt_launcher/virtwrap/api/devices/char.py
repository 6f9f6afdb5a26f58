"""Character devices: channels (guest agent, downward metrics), serial ports and consoles."""

from __future__ import annotations

from ..common import Alias
from ..xmlmodel import XMLElement, attr, child, element


@element("source")
class ChannelSource(XMLElement):
    mode: str | None = attr()
    path: str | None = attr()


@element("target")
class ChannelTarget(XMLElement):
    name: str | None = attr()
    type: str | None = attr()
    address: str | None = attr()
    port: int | None = attr(as_type=int)
    state: str | None = attr()


@element("channel")
class Channel(XMLElement):
    type: str | None = attr()
    source: ChannelSource | None = child(ChannelSource)
    target: ChannelTarget | None = child(ChannelTarget)


@element("target")
class SerialTarget(XMLElement):
    port: int | None = attr(as_type=int, go_pointer=True)


@element("source")
class SerialSource(XMLElement):
    mode: str | None = attr()
    path: str | None = attr()


@element("log")
class SerialLog(XMLElement):
    file: str | None = attr()
    append: str | None = attr()


@element("serial")
class Serial(XMLElement):
    type: str | None = attr()
    target: SerialTarget | None = child(SerialTarget)
    source: SerialSource | None = child(SerialSource)
    alias: Alias | None = child(Alias)
    log: SerialLog | None = child(SerialLog)


@element("target")
class ConsoleTarget(XMLElement):
    type: str | None = attr(go_pointer=True)
    port: int | None = attr(as_type=int, go_pointer=True)


@element("source")
class ConsoleSource(XMLElement):
    mode: str | None = attr()
    path: str | None = attr()


@element("console")
class Console(XMLElement):
    type: str | None = attr()
    target: ConsoleTarget | None = child(ConsoleTarget)
    source: ConsoleSource | None = child(ConsoleSource)
    alias: Alias | None = child(Alias)
