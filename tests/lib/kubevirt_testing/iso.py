"""Reading back an ISO 9660 image the way a guest sees it: Rock Ridge names, the volume label."""

from __future__ import annotations

import io
from pathlib import Path

import pycdlib


def read_iso(path: Path) -> tuple[str, dict[str, bytes]]:
    """The image's volume label and its files (``dir/name`` -> content)."""
    image = pycdlib.PyCdlib()
    image.open(str(path))
    try:
        files = {}
        for root, _, names in image.walk(rr_path="/"):
            for name in names:
                full = f"{root.rstrip('/')}/{name}"
                buffer = io.BytesIO()
                image.get_file_from_iso_fp(buffer, rr_path=full)
                files[full.lstrip("/")] = buffer.getvalue()
        return image.pvd.volume_identifier.decode().strip(), files
    finally:
        image.close()
