"""The import itself, CDI's data processor: read the source's header, then either write raw data
straight to the claim, or stage an image that needs converting in scratch space, validate and
convert it; then grow the image to the room the claim leaves, and report."""

from __future__ import annotations

import dataclasses
import os
import shutil
import tarfile
from collections.abc import Callable
from pathlib import Path

from kubevirt.cdi import sizes
from kubevirt.cdi_importer import http_source, qemu, registry
from kubevirt.cdi_importer.archive import extract_all
from kubevirt.cdi_importer.config import ImporterConfig, Paths
from kubevirt.cdi_importer.errors import (
    ImporterError,
    LargerPVCRequiredError,
    ScratchSpaceRequiredError,
    os_error_text,
    wrap,
)
from kubevirt.cdi_importer.formats import FormatError, Readable, Readers, open_readers, qcow2_virtual_size
from kubevirt.cdi_importer.progress import CountingReader, Progress
from kubevirt.cdi_importer.sparse import is_device, stream_to_file
from kubevirt.cdi_importer.termination import TerminationMessage
from kubevirt.cdi_importer.tlsroots import CertDirError, client_context
from kubevirt.log import get_logger
from kubevirt_api.cdi.constants import CONTENT_TYPE_ARCHIVE

SCRATCH_IMAGE = "tmpimage"
_TO_DIRECTORY = "Unable to transfer source data to target directory"
_RESIZE = "Unable to resize disk image to requested size"


@dataclasses.dataclass(frozen=True)
class Target:
    """Where the image goes and how much room there is."""

    path: Path  # /data/disk.img, the block device, or /data for an archive
    block: bool
    available: int  # the device's size, or min(free space, the claim's request)


def target_of(config: ImporterConfig, paths: Paths) -> Target:
    if is_device(paths.block_device):
        return Target(paths.block_device, True, device_size(paths.block_device))
    free = available_space(paths.data_dir)
    available = min(free, config.image_size) if config.image_size is not None else free
    dest = paths.data_dir if config.content_type == CONTENT_TYPE_ARCHIVE else paths.disk_image
    return Target(dest, False, max(available, 0))


def available_space(directory: Path) -> int:
    try:
        stat = os.statvfs(directory)
    except OSError:
        return -1
    return stat.f_bavail * stat.f_frsize


def device_size(device: Path) -> int:
    with device.open("rb") as handle:
        return handle.seek(0, os.SEEK_END)


@dataclasses.dataclass
class Importer:
    config: ImporterConfig
    paths: Paths
    progress: Progress
    target: Target
    preallocation_applied: bool = False

    def import_http(self) -> TerminationMessage:
        stream = http_source.open_stream(self.config, self.paths)
        try:
            return self.import_stream(stream, stream.content_length)
        finally:
            stream.close()

    def import_stream(self, stream: Readable, length: int = 0) -> TerminationMessage:
        """Import what ``stream`` holds (``length`` bytes, 0 when unknown, drives the progress)."""
        return self.receive_stream(stream, length)()

    def receive_stream(
        self, stream: Readable, length: int = 0, *, validate: bool = False
    ) -> Callable[[], TerminationMessage]:
        """Read all of ``stream`` into the target, or into scratch space when it must be converted,
        and hand back the rest of the import (conversion, resizing) to run now or later. ``validate``
        checks the received image fits the claim before returning, as CDI's async upload answers only
        once that is known."""
        counting = CountingReader(stream, length, self.progress)
        try:
            readers = open_readers(counting)
        except FormatError as err:
            raise wrap("Unable to obtain information about data source", err) from err
        finish = self._transfer(readers, validate=validate)

        def complete() -> TerminationMessage:
            finish()
            return self._complete()

        return complete

    def import_registry(self) -> TerminationMessage:
        scratch = self._require_scratch()
        disk_dir = scratch / registry.DISK_DIR
        shutil.rmtree(disk_dir, ignore_errors=True)
        try:
            context = client_context(
                self.config.cert_dir,
                self.paths.proxy_cert_dir,
                insecure=self.config.insecure_tls,
                accept=lambda name: name.endswith(".crt"),  # CDI hands registries *.crt files only
            )
            pulled = registry.pull_disk(
                self.config.endpoint,
                scratch,
                self.config.credentials,
                context,
                insecure=self.config.insecure_tls,
                architecture=self.config.registry_architecture,
                preallocate=self.config.preallocation,
            )
        except (ImporterError, CertDirError) as err:
            raise wrap("Unable to transfer source data to scratch space", err) from err
        self._convert(pulled.disk)
        self._resize()
        return self._complete(labels=registry.env_to_labels(pulled.env))

    def _transfer(self, readers: Readers, *, validate: bool = False) -> Callable[[], None]:
        """Write the data where it goes; the steps still to run once it is all there."""
        log = get_logger()
        log.info("found image format", formats=list(readers.formats))
        if self.config.content_type == CONTENT_TYPE_ARCHIVE:
            self._untar(readers)
            return lambda: None
        if not readers.convert:
            try:
                stream_to_file(readers.top, self.target.path, preallocate=self.config.preallocation)
            except ImporterError as err:
                raise wrap("Unable to transfer source data to target file", err) from err
            if validate and not self.target.block:
                qemu.validate(self.target.path, self.target.available)
            return self._resize
        scratch = self._require_scratch()
        if readers.image_format == "qcow2":
            # The header's size is checked before downloading, as CDI's pre-scratch validation does.
            virtual_size = qcow2_virtual_size(readers.header)
            if virtual_size > self.target.available:
                raise LargerPVCRequiredError(virtual_size, self.target.available)
        staged = scratch / SCRATCH_IMAGE
        staged.unlink(missing_ok=True)
        try:
            stream_to_file(readers.top, staged, preallocate=self.config.preallocation)
        except ImporterError as err:
            raise wrap("Unable to transfer source data to scratch space", err) from err
        if validate:
            try:
                qemu.validate(staged, self.target.available)
            except ImporterError:
                staged.unlink(missing_ok=True)
                raise
        image_format = readers.image_format

        def convert_and_resize() -> None:
            self._convert(staged, image_format)
            self._resize()

        return convert_and_resize

    def _untar(self, readers: Readers) -> None:
        if self.target.block:
            raise ImporterError(f"{_TO_DIRECTORY}: archive content cannot be imported into a block volume")
        try:
            with tarfile.open(fileobj=readers.top, mode="r|") as archive:  # type: ignore[call-overload]
                extract_all(archive, self.paths.data_dir)
        except (tarfile.TarError, OSError, EOFError) as err:
            text = os_error_text(err) if isinstance(err, OSError) else str(err)
            raise ImporterError(f"{_TO_DIRECTORY}: unable to untar files from endpoint: {text}") from err

    def _require_scratch(self) -> Path:
        scratch = self.paths.scratch_dir
        if available_space(scratch) <= 0:
            raise ScratchSpaceRequiredError()
        return scratch

    def _convert(self, source: Path, image_format: str = "") -> None:
        try:
            image = qemu.validate(source, self.target.available)
            if (image_format or image.format) == "qcow2":
                qemu.check(source, "qcow2")
            if not self.target.block:
                self.target.path.unlink(missing_ok=True)
            try:
                qemu.convert_to_raw(
                    source,
                    self.target.path,
                    preallocate=self.config.preallocation,
                    cache_mode=self.config.cache_mode,
                    on_progress=self.progress.advance,
                )
            except ImporterError as err:
                raise wrap("Conversion to Raw failed", err) from err
        except ImporterError as err:
            raise wrap("Unable to convert source data to target format", err) from err
        finally:
            source.unlink(missing_ok=True)  # scratch space is the claim's size again
        self.preallocation_applied = self.config.preallocation

    def _resize(self) -> None:
        """Grow a Filesystem image to what the claim holds after its overhead, then check it fits."""
        if self.target.block:
            self.preallocation_applied = self.config.preallocation
            return
        try:
            if self.config.image_size is not None:
                self._grow()
            qemu.validate(self.target.path, self.target.available)
            self.target.path.chmod(0o660)
        except ImporterError as err:
            raise wrap(_RESIZE, err) from err
        except OSError as err:
            raise ImporterError(
                f"{_RESIZE}: Unable to change permissions of target file: {os_error_text(err)}"
            ) from err
        self.preallocation_applied = self.config.preallocation

    def _grow(self) -> None:
        assert self.config.image_size is not None
        usable = sizes.usable_space(self.config.filesystem_overhead, self.target.available)
        size = min(usable, self.config.image_size)
        try:
            current = qemu.info(self.target.path).virtual_size
            if size > current:
                get_logger().info("Expanding image", size=size, current=current)
                qemu.resize(self.target.path, size, preallocate=self.config.preallocation)
        except ImporterError as err:
            raise wrap("Resize of image failed", err) from err

    def _complete(self, labels: dict[str, str] | None = None) -> TerminationMessage:
        self.progress.advance(100.0)
        return TerminationMessage(
            scratch_space_required=False,
            preallocation_applied=self.preallocation_applied,
            labels=labels or {},
        )
