"""Installing KubeVirt's seccomp profile where the kubelet finds localhost profiles
(``<kubelet root>/seccomp``), so that the KubeVirt CR can name it for launcher pods as
``kubevirt/kubevirt.json``; done whenever the cluster configuration changes while the
``KubevirtSeccompProfile`` gate is on."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Final

from kubevirt.log import get_logger
from kubevirt.virt_config import KUBEVIRT_SECCOMP_PROFILE_GATE, ClusterConfig

from .kubevirt_profile import kubevirt_profile

# What the CR's customProfile.localhostProfile names: relative to the kubelet's seccomp directory.
LOCALHOST_PROFILE: Final = "kubevirt/kubevirt.json"
MODE: Final = 0o700


@cache
def profile_bytes() -> bytes:
    return kubevirt_profile().serialise()


def profile_path(kubelet_root: Path) -> Path:
    return kubelet_root / "seccomp" / LOCALHOST_PROFILE


def install_profile(kubelet_root: Path) -> bool:
    """Writes the profile unless the file already holds it; returns whether it was written.

    Missing directories are made owner-only; the file is replaced whole, so a container starting
    meanwhile reads the old profile or the new one, never half of one. Raises :class:`OSError`.
    """
    path = profile_path(kubelet_root)
    _make_dirs(path.parent)
    content = profile_bytes()
    try:
        if path.read_bytes() == content:
            return False
    except FileNotFoundError:
        pass
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(content)
            os.fchmod(out.fileno(), MODE)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    return True


def _make_dirs(directory: Path) -> None:
    missing = [d for d in (directory, *directory.parents) if not d.exists()]
    for each in reversed(missing):
        with contextlib.suppress(FileExistsError):
            each.mkdir(mode=MODE)


class ProfileInstaller:
    """Installs the profile on each configuration change that leaves the gate on (an error is logged
    and retried on the next change); with the gate off, a profile already installed stays."""

    def __init__(self, kubelet_root: Path, config: Callable[[], ClusterConfig]) -> None:
        self._kubelet_root = kubelet_root
        self._config = config

    def config_changed(self) -> None:
        if not self._config().enabled(KUBEVIRT_SECCOMP_PROFILE_GATE):
            return
        log = get_logger()
        try:
            written = install_profile(self._kubelet_root)
        except OSError as err:
            log.error("cannot install KubeVirt's seccomp profile", reason=str(err))
            return
        if written:
            log.info("KubeVirt's seccomp profile installed", path=str(profile_path(self._kubelet_root)))
