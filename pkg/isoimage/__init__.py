"""ISO 9660 images holding a few small files: cloud-init's data sources and the config disks.

Written with pycdlib (pure Python, so the launcher image needs no xorriso) with Rock Ridge and Joliet
names, as KubeVirt's ``xorrisofs -joliet -rock`` images have them: guests see the files' real names and
the volume label (``cidata``, ``config-2``, ...). The image is written beside its final path and renamed
into place, so a reader never finds a half-written image.
"""

from __future__ import annotations

import contextlib
import io
import os
from collections.abc import Mapping
from pathlib import Path

# ISO 9660:1999 (level 4) keeps file names as they are, up to 207 characters.
_INTERCHANGE_LEVEL = 4
_MAX_NAME = 207
_MAX_LABEL = 32
_STAGING = ".staging"
# Like xorrisofs -partition_cyl_align (what KubeVirt uses): the image ends on a whole cylinder of 64 heads
# x 32 sectors x 512 bytes, so QEMU can open it writable with O_DIRECT on any block alignment.
CYLINDER = 64 * 32 * 512


class IsoImageError(ValueError):
    """The files or the label cannot go into an ISO image."""


def write_iso(path: Path, label: str, files: Mapping[str, bytes]) -> None:
    """An image at ``path`` labelled ``label`` holding ``files`` (``dir/name`` -> content)."""
    if not label or len(label) > _MAX_LABEL:
        raise IsoImageError(f"volume label {label!r} must have 1 to {_MAX_LABEL} characters")
    # Imported here: most launchers write no ISO, and the import costs each one's start-up CPU.
    import pycdlib
    from pycdlib.pycdlibexception import PyCdlibException

    image = pycdlib.PyCdlib()
    image.new(interchange_level=_INTERCHANGE_LEVEL, vol_ident=label, joliet=3, rock_ridge="1.09")
    try:
        made: set[str] = set()
        for name in sorted(files):
            parts = _parts(name)
            for depth in range(1, len(parts)):
                directory = "/" + "/".join(parts[:depth])
                if directory not in made:
                    image.add_directory(directory, rr_name=parts[depth - 1], joliet_path=directory)
                    made.add(directory)
            content = files[name]
            target = "/" + "/".join(parts)
            image.add_fp(io.BytesIO(content), len(content), target, rr_name=parts[-1], joliet_path=target)
        path.parent.mkdir(parents=True, exist_ok=True)
        staging = path.with_name(path.name + _STAGING)
        try:
            image.write(str(staging))
            size = staging.stat().st_size
            os.truncate(staging, -(-size // CYLINDER) * CYLINDER)  # padded with a sparse tail
            os.chmod(staging, 0o640)
            os.rename(staging, path)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                staging.unlink()
            raise
    except PyCdlibException as err:
        raise IsoImageError(f"cannot build the image {path.name}: {err}") from None
    finally:
        image.close()


def _parts(name: str) -> list[str]:
    parts = name.split("/")
    for part in parts:
        if part in ("", ".", "..") or len(part) > _MAX_NAME or "\0" in part:
            raise IsoImageError(f"{name!r} is not a usable file name in an ISO image")
    return parts
