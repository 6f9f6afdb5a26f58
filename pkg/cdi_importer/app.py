"""One run of the importer, start to exit code: the outcome goes to the termination message (JSON
on success or when scratch space is needed, plain text on failure), as CDI's cdi-importer writes it."""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from kubevirt.cdi import sizes
from kubevirt.cdi_importer import progress as progress_metrics
from kubevirt.cdi_importer import qemu, termination
from kubevirt.cdi_importer.config import DISK_IMAGE_NAME, ConfigError, ImporterConfig, Paths
from kubevirt.cdi_importer.errors import ConnectError, ImporterError, ScratchSpaceRequiredError
from kubevirt.cdi_importer.processor import Importer, Target, target_of
from kubevirt.cdi_importer.progress import Progress
from kubevirt.cdi_importer.termination import TerminationMessage
from kubevirt.log import get_logger
from kubevirt_api.cdi.constants import (
    CONTENT_TYPE_KUBEVIRT,
    SOURCE_HTTP,
    SOURCE_IMAGEIO,
    SOURCE_NONE,
    SOURCE_REGISTRY,
)

_ZERO_CHUNK = bytes(1 << 20)
READY_FILE_TIMEOUT_SECONDS = 60


def run(
    env: Mapping[str, str],
    paths: Paths | None = None,
    *,
    serve_metrics: bool = True,
    sleep: Callable[[float], None] = time.sleep,
) -> int:
    """Import as the environment says; the exit code (0 also when scratch space must be added)."""
    paths = paths or Paths()
    log = get_logger()
    try:
        config = ImporterConfig.from_env(env)
    except ConfigError as err:
        return _fail(paths, str(err))
    if config.ready_file:
        served = _wait_for_server(config.ready_file, sleep)
        if served is None:
            return _fail(paths, f"Timeout waiting for file {config.ready_file}")
        if served:
            config = dataclasses.replace(
                config, endpoint=config.endpoint.removesuffix(DISK_IMAGE_NAME) + served
            )
    progress = Progress(config.owner_uid)
    if serve_metrics:
        try:
            progress_metrics.serve(progress, paths.metrics_port)
        except OSError as err:  # progress is a nicety: the import goes on without it
            log.error("Unable to serve the import progress", error=str(err))
    log.info("Starting importer", source=config.source, content_type=config.content_type)
    if config.content_type != CONTENT_TYPE_KUBEVIRT and config.source in (SOURCE_REGISTRY, SOURCE_IMAGEIO):
        return _fail(
            paths, f"Unsupported content type {config.content_type} when importing from {config.source}"
        )
    target = target_of(config, paths)
    if config.source == SOURCE_NONE:
        return _blank(config, paths, target)
    importer = Importer(config, paths, progress, target)
    try:
        if config.source == SOURCE_HTTP:
            message = importer.import_http()
        elif config.source == SOURCE_REGISTRY:
            message = importer.import_registry()
        else:
            return _fail(paths, f"Unknown data source: {config.source}")
    except ScratchSpaceRequiredError:
        log.info("scratch space required and none found")
        _write(paths, TerminationMessage(scratch_space_required=True, preallocation_applied=False))
        return 0  # the controller recreates the pod with a scratch volume
    except ConnectError as err:
        return _fail(paths, f"Unable to connect to {config.source} data source: {err}")
    except ImporterError as err:
        return _fail(paths, f"Unable to process data: {err}")
    except Exception as err:  # never a traceback for a message: the controller shows it to users
        log.exception("import failed")
        return _fail(paths, f"Unable to process data: {err}")
    try:
        _sync(target.path)
    except OSError as err:
        return _fail(paths, f"could not fsync following qemu-img writing: {err}")
    _write(paths, message)
    log.info("Import Complete")
    if config.done_file:
        _touch(config.done_file)
    return 0


def _wait_for_server(ready_file: str, sleep: Callable[[float], None]) -> str | None:
    """The file name the node-pull server announces in its ready file (empty: disk.img), None when it did
    not appear within CDI's minute."""
    path = Path(ready_file)
    for _ in range(READY_FILE_TIMEOUT_SECONDS):
        if path.exists():
            return path.read_text().strip()
        sleep(1.0)
    return None


def _touch(done_file: str) -> None:
    try:
        Path(done_file).touch(exist_ok=False)
    except OSError as err:  # the server then runs on until the pod goes; the import itself succeeded
        get_logger().error("Failed creating the done file", file=done_file, reason=str(err))


def _blank(config: ImporterConfig, paths: Paths, target: Target) -> int:
    """A blank image: the claim's usable size in a new raw file; nothing at all for a block volume
    (an unwritten device reads as zeros) unless preallocation asks for it to be written."""
    if config.content_type != CONTENT_TYPE_KUBEVIRT:
        return _fail(paths, "Cannot create empty disk with content type archive")
    if target.block and not config.preallocation:
        get_logger().info("Blank block without preallocation is exactly an empty PVC, done populating")
        return 0
    size = min(target.available, config.image_size) if config.image_size is not None else target.available
    try:
        if target.block:
            _zero_device(target.path, size)
        else:
            usable = sizes.usable_space(config.filesystem_overhead, size)
            qemu.create_blank(target.path, usable, preallocate=config.preallocation)
    except (ImporterError, OSError) as err:
        return _fail(paths, f"Unable to create blank image: {err}")
    _sync(target.path)
    _write(paths, TerminationMessage(preallocation_applied=config.preallocation))
    return 0


def _zero_device(device: Path, size: int) -> None:
    fd = os.open(device, os.O_WRONLY)
    try:
        offset = 0
        while offset < size:
            offset += os.pwrite(fd, _ZERO_CHUNK[: min(len(_ZERO_CHUNK), size - offset)], offset)
        os.fsync(fd)
    finally:
        os.close(fd)


def _sync(path: Path) -> None:
    """Commit what qemu-img wrote with its writeback cache before the pod reports success."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write(paths: Paths, message: TerminationMessage) -> None:
    termination.write(paths.termination_log, message.to_json())


def _fail(paths: Paths, message: str) -> int:
    get_logger().error(message)
    termination.write(paths.termination_log, message)
    return 1
