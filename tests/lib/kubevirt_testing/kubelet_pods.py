"""What the kubelet writes into a pod's directory, for tests of the handler reading it."""

from __future__ import annotations

import os
from pathlib import Path

TIMESTAMPED = "..2026_01_01_00_00_00.000000001"


def service_account_volume(
    pods_dir: Path, pod_uid: str, namespace: str, *, name: str = "kube-api-access-x7k2p"
) -> Path:
    """The pod's service-account token volume as the kubelet's atomic writer lays it out: the files in a
    timestamped directory, ``..data`` pointing at it and each file a link through ``..data``."""
    volume = pods_dir / pod_uid / "volumes" / "kubernetes.io~projected" / name
    (volume / TIMESTAMPED).mkdir(parents=True)
    for file, content in (("namespace", namespace), ("token", "eyJhbGciOi.x.y"), ("ca.crt", "")):
        (volume / TIMESTAMPED / file).write_text(content)
        os.symlink(f"..data/{file}", volume / file)
    os.symlink(TIMESTAMPED, volume / "..data")
    return volume
