"""An upload's data through the importer's pipeline (format detection, decompression, scratch space,
qemu-img conversion, sizing to the claim, preallocation): each upload attempt is a fresh import of
the request's body into the claim, as CDI runs a new data processor per request. A host-assisted
clone's body skips that pipeline (see :mod:`kubevirt.cdi_uploadserver.clone`)."""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Final

from kubevirt.cdi_importer.config import ImporterConfig, Paths
from kubevirt.cdi_importer.errors import LargerPVCRequiredError
from kubevirt.cdi_importer.formats import Readable
from kubevirt.cdi_importer.processor import Importer, target_of
from kubevirt.cdi_importer.progress import Progress
from kubevirt.cdi_uploadserver import clone
from kubevirt.cdi_uploadserver.clone import CLONE_CONTENT_TYPES
from kubevirt.cdi_uploadserver.config import ServerConfig
from kubevirt_api.cdi.constants import CONTENT_TYPE_ARCHIVE, CONTENT_TYPE_KUBEVIRT

CONTENT_TYPE_HEADER: Final = "x-cdi-content-type"  # CDI's UploadContentTypeHeader

STREAM_FAILED: Final = "Saving stream failed"
NO_CAPACITY: Final = (
    "effective image size is larger than the reported available storage. A larger PVC is required"
)
_NO_CAPACITY_TEXTS: Final = ("no space left on device", "disk quota exceeded")


class UploadError(Exception):
    """An upload that could not be saved: the status and text to answer with."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason

    @property
    def text(self) -> str:
        return f"{STREAM_FAILED}: {self.reason}"


def is_clone(content_type: str) -> bool:
    return content_type in CLONE_CONTENT_TYPES


class Uploads:
    """Runs uploads into the claim the configuration names."""

    def __init__(self, config: ServerConfig, paths: Paths) -> None:
        self._config = config
        self._paths = config.importer_paths(paths)

    def process(self, stream: Readable, *, archive: bool, content_type: str = "") -> bool:
        """Import all of ``stream`` (a tar archive into the claim's directory when ``archive``);
        whether preallocation was applied. Raises :class:`UploadError`."""
        if is_clone(content_type):
            # A clone target's data goes in as the source had it, without the import pipeline.
            with _as_upload_error():
                return clone.receive(
                    stream, content_type, self._config.destination, preallocate=self._config.preallocation
                )
        with _as_upload_error():
            importer = self._importer(archive=archive)
            message = importer.import_stream(stream)
            _fsync(importer.target.path)
        return bool(message.preallocation_applied)

    def receive(self, stream: Readable, *, content_type: str = "") -> Callable[[], bool]:
        """Take in all of ``stream`` and check it fits, leaving the conversion and resizing to the
        step returned (which tells whether preallocation was applied). Both raise UploadError."""
        if is_clone(content_type):
            raise UploadError(500, "async clone not supported")
        with _as_upload_error():
            importer = self._importer(archive=False)
            finish = importer.receive_stream(stream, validate=True)

        def complete() -> bool:
            with _as_upload_error():
                message = finish()
                _fsync(importer.target.path)
            return bool(message.preallocation_applied)

        return complete

    def _importer(self, *, archive: bool) -> Importer:
        config = ImporterConfig.for_stream(
            content_type=CONTENT_TYPE_ARCHIVE if archive else CONTENT_TYPE_KUBEVIRT,
            image_size=self._config.image_size,
            filesystem_overhead=self._config.filesystem_overhead,
            preallocation=self._config.preallocation,
        )
        # The room is measured per attempt: a failed one may have left files behind.
        return Importer(config, self._paths, Progress(""), target_of(config, self._paths))


@contextlib.contextmanager
def _as_upload_error() -> Iterator[None]:
    """Any failure inside the block becomes an UploadError with CDI's status for it."""
    try:
        yield
    except UploadError:
        raise
    except Exception as err:
        if _no_capacity(err):
            raise UploadError(400, NO_CAPACITY) from err
        raise UploadError(500, str(err) or type(err).__name__) from err


def _no_capacity(err: BaseException) -> bool:
    """CDI answers 400 when the image does not fit: a full volume, or an image larger than the claim."""
    for cause in _chain(err):
        if isinstance(cause, LargerPVCRequiredError):
            return True
        if isinstance(cause, OSError) and cause.errno in (errno.ENOSPC, errno.EDQUOT):
            return True
    text = str(err).lower()
    return any(words in text for words in _NO_CAPACITY_TEXTS)


def _chain(err: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = err
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def _fsync(path: Path) -> None:
    """Commit what qemu-img wrote through its writeback cache before success is reported."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
