"""``qemu-img`` as CDI runs it: ``info`` bounded to 1 GiB of address space and 30 s of CPU (a crafted
image must not exhaust the pod), conversion to raw with progress, resizing and blank images."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Final

from kubevirt import childprocess
from kubevirt.cdi_importer.errors import ImporterError, LargerPVCRequiredError
from kubevirt.cdi_importer.sparse import is_device
from kubevirt.log import get_logger
from kubevirt_api.cdi.constants import CACHE_MODE_TRY_NONE

QEMU_IMG: Final = "qemu-img"
PRLIMIT: Final = "prlimit"  # util-linux; limits set before exec, not from a thread-unsafe preexec_fn
INFO_ADDRESS_SPACE: Final = 1 << 30
INFO_CPU_SECONDS: Final = 30
SUPPORTED_FORMATS: Final = frozenset({"raw", "qcow2", "vmdk", "vdi", "vpc", "vhdx"})
_PROGRESS: Final = re.compile(r"\((\d?\d\.\d\d)/100%\)")
_CONVERT_PREALLOCATION: Final = (("-o", "preallocation=falloc"), ("-o", "preallocation=full"), ("-S", "0"))
_RESIZE_PREALLOCATION: Final = (("--preallocation=falloc",), ("--preallocation=full",))
_UNSUPPORTED_PREALLOCATION: Final = "Unsupported preallocation mode"
# qemu-img check: 2 means corruptions, 1 that the check itself failed; 3 (leaked clusters) is harmless.
_CHECK_FAILED: Final = frozenset({1, 2})


class QemuError(ImporterError):
    """qemu-img failed, or judged the image unusable."""


@dataclasses.dataclass(frozen=True)
class ImageInfo:
    format: str
    virtual_size: int
    backing_file: str


def info(path: Path) -> ImageInfo:
    """``qemu-img info`` of ``path`` under CDI's limits."""
    limits = [PRLIMIT, f"--as={INFO_ADDRESS_SPACE}", f"--cpu={INFO_CPU_SECONDS}"]
    result = childprocess.run([*limits, QEMU_IMG, "info", "--output=json", str(path)])
    if result.returncode != 0:
        raise QemuError(f"{result.stderr.strip()}, {_failure(result.returncode)}")
    try:
        data = json.loads(result.stdout)
        return ImageInfo(
            format=str(data["format"]),
            virtual_size=int(data.get("virtual-size", 0)),
            backing_file=str(data.get("backing-filename", "")),
        )
    except (ValueError, KeyError, TypeError) as err:
        raise QemuError(f"Invalid json for image {path}: {err}") from None


def validate(path: Path, available: int) -> ImageInfo:
    """The image's description, once it is a supported format, its backing file exists and it fits."""
    image = info(path)
    if image.format not in SUPPORTED_FORMATS:
        raise QemuError(f"Invalid format {image.format} for image {path}")
    if image.backing_file and not Path(image.backing_file).exists():
        raise QemuError(f"Image {path} is invalid because it has invalid backing file {image.backing_file}")
    if available < image.virtual_size:
        raise LargerPVCRequiredError(image.virtual_size, available)
    return image


def check(path: Path, image_format: str) -> None:
    """Refuse a corrupt image: a truncated qcow2 converts without an error, its missing clusters
    silently read as zeros."""
    result = childprocess.run([QEMU_IMG, "check", "-f", image_format, "--output=json", str(path)])
    if result.returncode not in _CHECK_FAILED:
        return
    found = _check_errors(result.stdout)
    if found:
        raise QemuError(f"image {path} is corrupt: qemu-img check found {found} errors")
    raise QemuError(f"image {path} failed qemu-img check: {result.stderr.strip()}")


def _check_errors(report: str) -> int:
    try:
        data = json.loads(report)
        return int(data.get("corruptions", 0)) + int(data.get("check-errors", 0))
    except (ValueError, TypeError, AttributeError):
        return 0


def convert_to_raw(
    source: Path,
    dest: Path,
    *,
    preallocate: bool,
    cache_mode: str,
    on_progress: Callable[[float], None],
) -> None:
    args = ["convert", "-t", _cache_mode(dest, cache_mode), "-p", "-O", "raw", str(source), str(dest)]
    methods = _CONVERT_PREALLOCATION if preallocate else ((),)
    try:
        _with_preallocation(args, methods, lambda argv: _run_with_progress(argv, on_progress))
    except QemuError as err:
        if not is_device(dest):
            dest.unlink(missing_ok=True)
        raise QemuError(f"could not convert image to raw: {err}") from err


def resize(path: Path, size: int, *, preallocate: bool) -> None:
    args = ["resize", "-f", "raw", str(path), str(size)]
    methods = _RESIZE_PREALLOCATION if preallocate else ((),)
    try:
        _with_preallocation(args, methods, _run)
    except QemuError as err:
        raise QemuError(f"Error resizing image {path}: {err}") from err


def create_blank(path: Path, size: int, *, preallocate: bool) -> None:
    args = [QEMU_IMG, "create", "-f", "raw", str(path), str(size)]
    if preallocate:
        args += ["-o", "preallocation=falloc"]
    result = childprocess.run(args)
    if result.returncode != 0:
        path.unlink(missing_ok=True)
        raise QemuError(
            f"could not create raw image with size {size} in {path}: {_failure(result.returncode)}"
        )
    path.chmod(0o660)


def _with_preallocation(
    args: list[str], methods: Sequence[Sequence[str]], run: Callable[[list[str]], str]
) -> None:
    """Run ``args`` with the first preallocation method qemu-img supports for the target."""
    for method in methods:
        try:
            run([args[0], *method, *args[1:]])
            return
        except QemuError as err:
            if _UNSUPPORTED_PREALLOCATION not in str(err) or method is methods[-1]:
                raise


def _run(args: list[str]) -> str:
    result = childprocess.run([QEMU_IMG, *args])
    if result.returncode != 0:
        raise QemuError(f"{result.stderr.strip()}, {_failure(result.returncode)}")
    return result.stdout


def _run_with_progress(args: list[str], on_progress: Callable[[float], None]) -> str:
    """Run qemu-img, passing each ``(NN.NN/100%)`` it prints to ``on_progress``."""
    # stderr goes to a file: a pipe read only at the end could fill up and stall qemu-img.
    with tempfile.TemporaryFile() as stderr_file:
        process = childprocess.start_owned(
            lambda: subprocess.Popen([QEMU_IMG, *args], stdout=subprocess.PIPE, stderr=stderr_file)
        )
        returncode = _follow_progress(process, on_progress)
        stderr_file.seek(0)
        stderr = stderr_file.read().decode(errors="replace")
    if returncode != 0:
        raise QemuError(f"{stderr.strip()}, {_failure(returncode)}")
    return ""


def _follow_progress(process: subprocess.Popen[bytes], on_progress: Callable[[float], None]) -> int:
    try:
        assert process.stdout is not None
        pending = b""
        while chunk := os.read(process.stdout.fileno(), 4096):
            pending += chunk
            *lines, pending = re.split(rb"[\r\n]", pending)
            for line in lines:
                if match := _PROGRESS.search(line.decode(errors="replace")):
                    on_progress(float(match.group(1)))
        return process.wait()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        childprocess.forget(process.pid)


def _failure(returncode: int) -> str:
    # Go's wording, which CDI's messages carry.
    if returncode < 0:
        return f"qemu-img execution failed: signal: {-returncode}"
    return f"qemu-img execution failed: exit status {returncode}"


def _cache_mode(dest: Path, cache_mode: str) -> str:
    """writeback, or with CACHE_MODE=TRYNONE (after an OOM kill) ``none`` where O_DIRECT works."""
    if cache_mode != CACHE_MODE_TRY_NONE:
        return "writeback"
    probe = dest if is_device(dest) else dest.parent / ".cdi-direct-io-probe"
    try:
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | getattr(os, "O_DIRECT", 0), 0o600)
    except OSError:
        return "writeback"
    os.close(fd)
    if probe != dest:
        probe.unlink(missing_ok=True)
    get_logger().info("target supports direct I/O", path=str(dest))
    return "none"
