"""A host-assisted clone's target: the body (snappy framed) holds a tar of the source claim's files
(``filesystem-clone``) or the source device's bytes (``blockdevice-clone``), written as CDI's upload
server writes them, without the import pipeline:

- a tar into a Filesystem claim: unpacked into the claim's folder (reported as preallocated, as CDI
  does: the files arrive as the source had them);
- a tar into a Block claim: its disk image's bytes onto the device;
- device bytes: onto the device, or into the claim's disk image file.

Nothing is resized: the controller sized the target for the source. Without preallocation, zeros
become holes (a punched range on a device)."""

from __future__ import annotations

import os
import tarfile
from pathlib import Path
from typing import IO, Final

from kubevirt.cdi_importer.archive import extract_all
from kubevirt.cdi_importer.config import DISK_IMAGE_NAME
from kubevirt.cdi_importer.formats import Readable
from kubevirt.cdi_importer.sparse import is_device, stream_to_file
from kubevirt.cdi_uploadserver.snappy import FramedReader
from kubevirt.log import get_logger
from kubevirt_api.cdi.constants import ImporterPaths

FILESYSTEM_CLONE: Final = "filesystem-clone"
BLOCKDEVICE_CLONE: Final = "blockdevice-clone"
CLONE_CONTENT_TYPES: Final = frozenset({FILESYSTEM_CLONE, BLOCKDEVICE_CLONE})


class CloneError(Exception):
    """The clone's data could not be written."""


def is_block_target(destination: Path) -> bool:
    """CDI tells a Block claim by the destination's path; a device elsewhere is one too."""
    return destination == Path(ImporterPaths.BLOCK_DEVICE) or is_device(destination)


def receive(stream: Readable, content_type: str, destination: Path, *, preallocate: bool) -> bool:
    """Write a clone's body to ``destination`` (the device, or the image file whose folder is the
    claim's mount); whether preallocation is to be reported as applied."""
    data = FramedReader(stream)
    if content_type == FILESYSTEM_CLONE:
        if not is_block_target(destination):
            unpack(data, destination.parent)
            return True
        with tarfile.open(fileobj=data, mode="r|") as archive:  # type: ignore[call-overload]
            image = disk_image(archive)
            _write(image, destination, preallocate=preallocate)
        return False
    _write(data, destination, preallocate=preallocate)
    return False


def unpack(data: Readable, directory: Path) -> None:
    """Extract the source's files into ``directory``, each written to disk before success is told."""
    get_logger().info("begin untar", destination=str(directory))
    try:
        with tarfile.open(fileobj=data, mode="r|") as archive:  # type: ignore[call-overload]
            extract_all(archive, directory)
            files = [member.name for member in archive.getmembers() if member.isreg()]
    except (tarfile.TarError, EOFError) as err:
        raise CloneError(f"error unarchiving to {directory}: {err}") from err
    for name in files:
        _fsync(directory / name.lstrip("/"))


def disk_image(archive: tarfile.TarFile) -> IO[bytes]:
    """The data of the archive's first file named like a disk image (CDI matches the name's text)."""
    for member in archive:
        if DISK_IMAGE_NAME in member.name and member.isreg():
            handle = archive.extractfile(member)
            if handle is not None:
                return handle
    raise CloneError("no disk image found in tar")


def _write(data: Readable, destination: Path, *, preallocate: bool) -> None:
    written = stream_to_file(data, destination, preallocate=preallocate)
    get_logger().info("Wrote clone data", destination=str(destination), bytes=written)


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
