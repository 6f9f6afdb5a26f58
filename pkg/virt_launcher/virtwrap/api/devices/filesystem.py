"""``<filesystem>``: virtiofs shares."""

from __future__ import annotations

from ..xmlmodel import XMLElement, attr, child, element


@element("source")
class FilesystemSource(XMLElement):
    dir: str | None = attr()
    socket: str | None = attr()


@element("target")
class FilesystemTarget(XMLElement):
    dir: str | None = attr()


@element("driver")
class FilesystemDriver(XMLElement):
    type: str | None = attr()
    queue: str | None = attr()


@element("filesystem", go_extra={"Binary": None})
class FilesystemDevice(XMLElement):
    type: str | None = attr()
    access_mode: str | None = attr("accessMode")
    source: FilesystemSource | None = child(FilesystemSource)
    target: FilesystemTarget | None = child(FilesystemTarget)
    driver: FilesystemDriver | None = child(FilesystemDriver)
