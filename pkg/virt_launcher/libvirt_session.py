"""libvirt's session mode, for a launcher that runs as its pod's non-root user (KubeVirt's default, 107).

A non-root process can make neither the private mount namespace nor the system directories the root
launcher gives its libvirtd, and needs neither: libvirtd started by a non-root user serves libvirt's
session mode (URIs ``qemu:///session``), runs QEMU as that same user and keeps its state where the XDG
variables point. They are set as KubeVirt's launcher pod sets them: configuration and cache under the
private directory (``<private>/libvirt``: ``qemu.conf``, ``qemu/nvram``, ``qemu/log``, ``qemu/cache``),
runtime state under ``/var/run/libvirt`` (the pod's ``libvirt-runtime`` volume, where the converter also
puts empty disks). Nothing here needs a privilege, so all of it works under ``no_new_privs``.
"""

from __future__ import annotations

import dataclasses
import os
import pwd
from collections.abc import Mapping
from pathlib import Path

RUNTIME_PARENT = Path("/var/run")  # XDG_RUNTIME_DIR: libvirt's runtime state goes to <it>/libvirt


class SessionError(Exception):
    """libvirt's session mode cannot run for this process."""


@dataclasses.dataclass(frozen=True)
class SessionLayout:
    """Where a session libvirtd keeps what: ``home`` is its XDG configuration and cache home,
    ``runtime_parent`` its XDG runtime directory; ``uid`` and ``gid`` the user QEMU runs as (ours)."""

    home: Path
    runtime_parent: Path = RUNTIME_PARENT
    uid: int = dataclasses.field(default_factory=os.geteuid)
    gid: int = dataclasses.field(default_factory=os.getegid)

    @property
    def config_dir(self) -> Path:
        return self.home / "libvirt"

    @property
    def qemu_conf(self) -> Path:
        return self.config_dir / "qemu.conf"

    @property
    def capabilities_dir(self) -> Path:
        """libvirt's cache of QEMU's capabilities (seeding it spares the probe at start)."""
        return self.home / "libvirt" / "qemu" / "cache" / "capabilities"

    @property
    def run_dir(self) -> Path:
        return self.runtime_parent / "libvirt"

    def environment(self, base: Mapping[str, str]) -> dict[str, str]:
        """``base`` with the XDG variables that place libvirt's session directories."""
        return {
            **base,
            "XDG_CONFIG_HOME": str(self.home),
            "XDG_CACHE_HOME": str(self.home),
            "XDG_RUNTIME_DIR": str(self.runtime_parent),
        }

    def qemu_conf_lines(self) -> list[str]:
        """KubeVirt's non-root qemu.conf, less what this libvirt cannot do: QEMU's stdio goes to plain
        files (there is no virtlogd to hand it to)."""
        return [
            'stdio_handler = "file"',
            'vnc_listen = "0.0.0.0"',
            "vnc_tls = 0",
            "vnc_sasl = 0",
            # Numeric: the user is this process's own, whatever the image's passwd calls it.
            f'user = "+{self.uid}"',
            f'group = "+{self.gid}"',
            "dynamic_ownership = 1",
            "remember_owner = 0",
            "namespaces = [ ]",
            "cgroup_controllers = [ ]",
        ]

    def check_user(self) -> None:
        """Session mode needs a non-root user that has a passwd entry: libvirtd names every client by
        its user record and refuses a client it cannot name (the launcher's own connection too)."""
        if self.uid == 0:
            raise SessionError(
                "libvirt's session mode is for a non-root user, but virt-launcher runs as root"
            )
        try:
            pwd.getpwuid(self.uid)
        except KeyError:
            raise SessionError(
                f"uid {self.uid} has no passwd entry: libvirtd refuses clients it cannot name "
                "(KubeVirt's launcher image has the user qemu, uid 107)"
            ) from None
