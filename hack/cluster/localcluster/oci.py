"""OCI image archives without a container engine: layer tarballs from directories and the image layout
(``oci-layout``, ``index.json``, content-addressed blobs) that ``ctr images import`` reads."""

from __future__ import annotations

import hashlib
import io
import json
import os
import stat
import tarfile
from dataclasses import dataclass
from pathlib import Path

WHITEOUT_PREFIX = ".wh."
OPAQUE_MARKER = ".wh..wh..opq"
# Fixed timestamps keep the layers' digests stable when their contents are.
EPOCH = 0


@dataclass(frozen=True)
class Layer:
    path: Path  # an uncompressed tar
    digest: str  # sha256:<hex> of that tar (its diff ID too, since it is not compressed)
    size: int


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        while chunk := stream.read(1 << 20):
            digest.update(chunk)
    return f"sha256:{digest.hexdigest()}"


def _is_opaque(path: Path) -> bool:
    try:
        return os.getxattr(path, "trusted.overlay.opaque", follow_symlinks=False) == b"y"
    except OSError:
        return False


def write_layer(source: Path, target: Path) -> Layer:
    """Tars ``source`` (a root filesystem or an overlayfs upper directory) as a layer: overlayfs
    whiteouts (0:0 character devices) and opaque directories become their OCI marker files."""
    partial = target.with_suffix(".partial")
    with tarfile.open(partial, "w", format=tarfile.PAX_FORMAT) as tar:
        for directory, subdirs, files in os.walk(source):
            subdirs.sort()
            here = Path(directory)
            relative = here.relative_to(source)
            if relative != Path(".") and _is_opaque(here):
                _add_empty(tar, relative / OPAQUE_MARKER)
            for name in sorted(subdirs + files):
                path = here / name
                arcname = str(relative / name) if relative != Path(".") else name
                info = path.lstat()
                if stat.S_ISCHR(info.st_mode) and info.st_rdev == 0:
                    _add_empty(tar, relative / f"{WHITEOUT_PREFIX}{name}")
                    continue
                if stat.S_ISSOCK(info.st_mode):
                    continue
                entry = tar.gettarinfo(str(path), arcname=arcname)
                entry.uname = entry.gname = ""
                entry.mtime = EPOCH
                entry.pax_headers = {**entry.pax_headers, **_kept_xattrs(path)}
                if entry.isreg():
                    with path.open("rb") as content:
                        tar.addfile(entry, content)
                else:
                    tar.addfile(entry)
    partial.rename(target)
    return Layer(path=target, digest=_sha256_file(target), size=target.stat().st_size)


# Extended attributes a layer keeps (as PAX records, which containerd applies): file capabilities, such as
# virt-launcher-monitor's.
KEPT_XATTRS = ("security.capability",)


def _kept_xattrs(path: Path) -> dict[str, str]:
    found = {}
    for name in KEPT_XATTRS:
        try:
            value = os.getxattr(path, name, follow_symlinks=False)
        except OSError:
            continue
        # tarfile writes PAX values as UTF-8 text; surrogateescape carries the raw bytes through.
        found[f"SCHILY.xattr.{name}"] = value.decode("utf-8", "surrogateescape")
    return found


def _add_empty(tar: tarfile.TarFile, relative: Path) -> None:
    entry = tarfile.TarInfo(str(relative))
    entry.mtime = EPOCH
    entry.mode = 0o644
    tar.addfile(entry, io.BytesIO(b""))


@dataclass(frozen=True)
class ImageConfig:
    entrypoint: list[str]
    cmd: list[str]
    env: list[str]
    working_dir: str = "/"
    user: str = ""  # numeric, so that a pod's runAsNonRoot can be checked without a passwd lookup


def _blob(tar: tarfile.TarFile, content: bytes) -> tuple[str, int]:
    digest = f"sha256:{hashlib.sha256(content).hexdigest()}"
    entry = tarfile.TarInfo(f"blobs/sha256/{digest.split(':')[1]}")
    entry.size = len(content)
    entry.mtime = EPOCH
    tar.addfile(entry, io.BytesIO(content))
    return digest, len(content)


def write_archive(target: Path, name: str, layers: list[Layer], config: ImageConfig) -> str:
    """Writes an OCI image layout tarball for ``name`` (``host/path:tag``); returns the manifest digest."""
    image_config = {
        "architecture": "amd64",
        "os": "linux",
        "config": {
            "Entrypoint": config.entrypoint or None,
            "Cmd": config.cmd or None,
            "Env": config.env,
            "WorkingDir": config.working_dir,
            **({"User": config.user} if config.user else {}),
        },
        "rootfs": {"type": "layers", "diff_ids": [layer.digest for layer in layers]},
        "history": [{"created_by": f"layer {i}"} for i in range(len(layers))],
    }
    partial = target.with_suffix(".partial")
    with tarfile.open(partial, "w") as tar:
        config_digest, config_size = _blob(tar, json.dumps(image_config, sort_keys=True).encode())
        for layer in layers:
            entry = tarfile.TarInfo(f"blobs/sha256/{layer.digest.split(':')[1]}")
            entry.size = layer.size
            entry.mtime = EPOCH
            with layer.path.open("rb") as content:
                tar.addfile(entry, content)
        manifest = {
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": {
                "mediaType": "application/vnd.oci.image.config.v1+json",
                "digest": config_digest,
                "size": config_size,
            },
            "layers": [
                {
                    "mediaType": "application/vnd.oci.image.layer.v1.tar",
                    "digest": layer.digest,
                    "size": layer.size,
                }
                for layer in layers
            ],
        }
        manifest_digest, manifest_size = _blob(tar, json.dumps(manifest, sort_keys=True).encode())
        index = {
            "schemaVersion": 2,
            "manifests": [
                {
                    "mediaType": "application/vnd.oci.image.manifest.v1+json",
                    "digest": manifest_digest,
                    "size": manifest_size,
                    "platform": {"architecture": "amd64", "os": "linux"},
                    "annotations": {
                        "io.containerd.image.name": name,
                        "org.opencontainers.image.ref.name": name.rsplit(":", 1)[1],
                    },
                }
            ],
        }
        layout_files: dict[str, object] = {"oci-layout": {"imageLayoutVersion": "1.0.0"}, "index.json": index}
        for file_name, document in layout_files.items():
            data = json.dumps(document).encode()
            entry = tarfile.TarInfo(file_name)
            entry.size = len(data)
            entry.mtime = EPOCH
            tar.addfile(entry, io.BytesIO(data))
    partial.rename(target)
    return manifest_digest
