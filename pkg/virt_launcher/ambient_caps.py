"""CAP_NET_BIND_SERVICE passed on to the children of a non-root launcher, as KubeVirt passes it.

A non-root process keeps a capability across ``exec`` only when the capability is ambient. KubeVirt's
compute container drops every capability but NET_BIND_SERVICE; its monitor starts virt-launcher, and the
launcher its libvirt daemon, with that one raised as ambient, so that the launcher's DHCP server (and
whatever libvirt starts) may bind privileged ports. Root's children get their capabilities without this.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Callable
from pathlib import Path

CAP_NET_BIND_SERVICE = 10
_PR_CAP_AMBIENT = 47
_PR_CAP_AMBIENT_RAISE = 2
_CAPABILITY_VERSION_3 = 0x20080522


class _Header(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _Data(ctypes.Structure):
    _fields_ = [
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    ]


def holds(capability: int, status: Path = Path("/proc/self/status")) -> bool:
    """Whether this process has ``capability`` in its permitted set."""
    for line in status.read_text().splitlines():
        if line.startswith("CapPrm:"):
            return bool(int(line.split()[1], 16) >> capability & 1)
    return False


def ambient_raiser(capability: int = CAP_NET_BIND_SERVICE) -> Callable[[], None] | None:
    """A ``preexec_fn`` that makes ``capability`` ambient in the child, so that it survives the child's
    ``exec``; None when this process is root or does not hold the capability (nothing to pass on)."""
    if os.geteuid() == 0 or not holds(capability):
        return None
    # Looked up before the fork: the child only calls.
    libc = ctypes.CDLL(None, use_errno=True)
    capget, capset, prctl = libc.capget, libc.capset, libc.prctl
    word, bit = divmod(capability, 32)

    def raise_ambient() -> None:
        # Ambient needs the capability inheritable too; a refusal leaves the child without it, and what
        # needs it then reports its own failure.
        header = _Header(_CAPABILITY_VERSION_3, 0)
        data = (_Data * 2)()
        if capget(ctypes.byref(header), data) != 0:
            return
        data[word].inheritable |= 1 << bit
        if capset(ctypes.byref(header), data) == 0:
            prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_RAISE, capability, 0, 0)

    return raise_ambient
