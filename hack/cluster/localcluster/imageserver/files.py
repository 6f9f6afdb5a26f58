"""What the test image server serves, made from the test guests' raw disks when its image is built.

The plain test guest comes in every form an HTTP importer must read (raw, qcow2, raw and qcow2 compressed
with gzip, raw compressed with xz); the CirrOS- and Alpine-compatible guests, which tests boot and log in
to, as qcow2 only (CirrOS's own format; raw copies would add most of the image's size and nothing new).
Bad input for the importer's error paths: a qcow2 and an xz stream cut in half, and a text file that is no
disk image. ``index.json`` lists every file with its size, SHA-256, format and compression, the guest it
holds and that guest's virtual size.

For DataVolumes with a ``registry`` source, the CirrOS-compatible guest's containerDisk (the very layer and
config of ``hack/build-images``' image of that name, so the same manifest digest) also goes into
``registry/`` in the layout :mod:`.server` reads, tagged ``devel`` and ``latest``; ``index.json`` lists it
under ``images``.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import lzma
import os
import shutil
import subprocess
import tarfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from .. import oci, testguest
from ..layout import IMAGE_TAG
from . import server

INDEX = "index.json"  # the server answers "/" with it
NOT_A_DISK = "not-a-disk-image.txt"
NOT_A_DISK_TEXT = "This file is not a disk image: an importer given it must fail.\n"
RAW, QCOW2 = "raw", "qcow2"
GZ, XZ = "gz", "xz"
# (format, compression) of each form of a guest; "" is uncompressed.
EVERY_FORM = ((RAW, ""), (QCOW2, ""), (RAW, GZ), (RAW, XZ), (QCOW2, GZ))
COMPATIBLE_FORMS = ((QCOW2, ""),)
TRUNCATED_FORMS = ((QCOW2, ""), (RAW, XZ))
# The registry's images: containerDisk repositories (named as their guest flavours) and their tags.
REGISTRY_REPOSITORY = testguest.CIRROS_COMPATIBLE.name
REGISTRY_REPOSITORIES = (REGISTRY_REPOSITORY,)
REGISTRY_TAGS = (IMAGE_TAG, "latest")
# What hack/build-images gives a test guest's containerDisk: no entrypoint, command or environment.
CONTAINER_DISK_CONFIG = oci.ImageConfig(entrypoint=[], cmd=[], env=[])


@dataclass(frozen=True)
class Served:
    """One guest disk as a file on the server."""

    guest: str  # the test guest flavour's name
    format: str  # raw or qcow2, once decompressed
    compression: str = ""  # gz, xz or ""
    truncated: bool = False  # only its first half

    @property
    def name(self) -> str:
        stem = f"{self.guest}-truncated" if self.truncated else self.guest
        return ".".join(part for part in (stem, self.format, self.compression) if part)


def catalogue() -> list[Served]:
    """Every guest disk the server holds."""
    plain = testguest.TEST_GUEST.name
    out = [Served(plain, fmt, compression) for fmt, compression in EVERY_FORM]
    for flavour in (testguest.CIRROS_COMPATIBLE, testguest.ALPINE_COMPATIBLE):
        out += [Served(flavour.name, fmt, compression) for fmt, compression in COMPATIBLE_FORMS]
    out += [Served(plain, fmt, compression, truncated=True) for fmt, compression in TRUNCATED_FORMS]
    return out


def file_names() -> list[str]:
    """Every file the server holds (the index included)."""
    return [*(served.name for served in catalogue()), NOT_A_DISK, INDEX]


def registry_images() -> list[str]:
    """Every image (``repository:tag``) the server's registry holds."""
    return [f"{repository}:{tag}" for repository in REGISTRY_REPOSITORIES for tag in REGISTRY_TAGS]


def generate(
    disks: Mapping[str, Path], out: Path, container_disks: Mapping[str, oci.Layer]
) -> list[dict[str, object]]:
    """Writes every file of :func:`catalogue` (from ``disks``: flavour name -> raw disk), the non-image,
    the registry of :data:`REGISTRY_REPOSITORIES` (from ``container_disks``: flavour name -> the one layer
    of its containerDisk) and ``index.json`` into the existing folder ``out``; returns the index's file
    entries."""
    missing = sorted({served.guest for served in catalogue()} - set(disks))
    if missing:
        raise ValueError(f"disks: no raw disk for the guests {', '.join(missing)}")
    missing = sorted(set(REGISTRY_REPOSITORIES) - set(container_disks))
    if missing:
        raise ValueError(f"container_disks: no containerDisk layer for {', '.join(missing)}")
    work = out / ".work"
    work.mkdir()
    try:
        entries = [_write(served, disks[served.guest], work, out) for served in catalogue()]
        registry = {name: container_disks[name] for name in REGISTRY_REPOSITORIES}
        images = write_registry(registry, out / server.REGISTRY_DIR, work)
    finally:
        shutil.rmtree(work)
    (out / NOT_A_DISK).write_text(NOT_A_DISK_TEXT)
    not_a_disk = {"format": "", "compression": "", "guest": "", "virtualSize": 0, "truncated": False}
    entries.append(_entry(out / NOT_A_DISK, not_a_disk))
    (out / INDEX).write_text(json.dumps({"files": entries, "images": images}, indent=2) + "\n")
    return entries


def write_registry(
    container_disks: Mapping[str, oci.Layer], registry: Path, work: Path
) -> list[dict[str, object]]:
    """Writes each containerDisk (repository -> its one layer) as an image tagged :data:`REGISTRY_TAGS`
    into the new folder ``registry`` (``work``: an existing folder for temporary files); returns an entry
    per image (``repository:tag``, manifest digest and media type)."""
    blobs = registry / server.BLOBS_DIR
    blobs.mkdir(parents=True)
    repositories: dict[str, object] = {}
    entries: list[dict[str, object]] = []
    for repository, layer in sorted(container_disks.items()):
        # The OCI archive hack/build-images writes, unpacked: the same blobs, so the same digests.
        archive = work / f"{repository}.oci.tar"
        name = f"{repository}:{REGISTRY_TAGS[0]}"
        digest = oci.write_archive(archive, name, [layer], CONTAINER_DISK_CONFIG)
        _unpack_blobs(archive, blobs)
        archive.unlink()
        manifest = json.loads((blobs / digest.removeprefix("sha256:")).read_bytes())
        media_type = str(manifest["mediaType"])
        repositories[repository] = {
            "manifests": {digest: media_type},
            "tags": dict.fromkeys(REGISTRY_TAGS, digest),
        }
        for tag in REGISTRY_TAGS:
            entries.append({"image": f"{repository}:{tag}", "digest": digest, "mediaType": media_type})
    (registry / server.TAGS_FILE).write_text(json.dumps({"repositories": repositories}, indent=2) + "\n")
    return entries


def _unpack_blobs(archive: Path, blobs: Path) -> None:
    prefix = f"{server.BLOBS_DIR}/"
    with tarfile.open(archive) as tar:
        for member in tar:
            if not (member.isfile() and member.name.startswith(prefix)):
                continue
            content = tar.extractfile(member)
            assert content is not None  # a regular file's content
            with (blobs / member.name.removeprefix(prefix)).open("wb") as sink:
                shutil.copyfileobj(content, sink, 1 << 20)


def _plain(disk: Path, served: Served, work: Path) -> Path:
    """The guest's disk in the served file's format, uncompressed (qcow2 converted once per guest)."""
    if served.format == RAW:
        return disk
    converted = work / f"{served.guest}.qcow2"
    if not converted.exists():
        _qemu_img("convert", "-f", "raw", "-O", "qcow2", str(disk), str(converted))
    return converted


def _write(served: Served, disk: Path, work: Path, out: Path) -> dict[str, object]:
    target = out / served.name
    with _plain(disk, served, work).open("rb") as source, _open(target, served.compression) as sink:
        shutil.copyfileobj(source, sink, 1 << 20)
    if served.truncated:
        os.truncate(target, target.stat().st_size // 2)
    fields: dict[str, object] = {
        "format": served.format,
        "compression": served.compression,
        "guest": served.guest,
        "virtualSize": disk.stat().st_size,
        "truncated": served.truncated,
    }
    return _entry(target, fields)


def _open(path: Path, compression: str) -> io.BufferedIOBase:
    """``path`` opened for writing through the compression (reproducibly: gzip records no time)."""
    if compression == GZ:
        return gzip.GzipFile(path, "wb", compresslevel=6, mtime=0)
    if compression == XZ:
        return lzma.open(path, "wb", format=lzma.FORMAT_XZ, preset=6)
    return path.open("wb")


def _entry(path: Path, fields: dict[str, object]) -> dict[str, object]:
    digest = hashlib.sha256()
    with path.open("rb") as content:
        while chunk := content.read(1 << 20):
            digest.update(chunk)
    return {"name": path.name, "size": path.stat().st_size, "sha256": digest.hexdigest(), **fields}


def _qemu_img(*args: str) -> str:
    try:
        result = subprocess.run(["qemu-img", *args], capture_output=True, text=True, check=False)
    except FileNotFoundError as error:
        raise RuntimeError(
            "qemu-img not found: the test image server's qcow2 files need qemu-utils"
        ) from error
    if result.returncode != 0:
        raise RuntimeError(f"qemu-img {' '.join(args)} failed ({result.returncode}): {result.stderr.strip()}")
    return result.stdout
