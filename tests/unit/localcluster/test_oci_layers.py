"""Image layers keep file capabilities: virt-launcher-monitor's NET_BIND_SERVICE must reach the node."""

from __future__ import annotations

import os
import sys
import tarfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "hack" / "cluster"))

from localcluster import oci  # noqa: E402

# struct vfs_cap_data, revision 2, effective: NET_BIND_SERVICE permitted.
CAPABILITY = (0x02000001).to_bytes(4, "little") + (1 << 10).to_bytes(4, "little") + bytes(12)


def test_a_file_capability_becomes_a_pax_record_and_other_files_carry_none(tmp_path: Path) -> None:
    root = tmp_path / "fs"
    (root / "usr/bin").mkdir(parents=True)
    front = root / "usr/bin/virt-launcher-monitor"
    front.write_bytes(b"\x7fELF")
    os.setxattr(front, "security.capability", CAPABILITY)
    (root / "usr/bin/plain").write_bytes(b"#!/bin/sh\n")
    layer = oci.write_layer(root, tmp_path / "layer.tar")
    with tarfile.open(layer.path) as tar:
        records = tar.getmember("usr/bin/virt-launcher-monitor").pax_headers
        assert records["SCHILY.xattr.security.capability"].encode("utf-8", "surrogateescape") == CAPABILITY
        assert not any(key.startswith("SCHILY.xattr.") for key in tar.getmember("usr/bin/plain").pax_headers)
