"""A seccomp profile in the JSON format of containers/common's ``pkg/seccomp`` (what CRI-O reads, and what
containerd reads as an OCI ``LinuxSeccomp``, ignoring the fields the OCI format lacks).

``Profile.to_json`` lays the fields out as that Go package marshals them (its json tags: the same names in
the same order, empty optional fields left out, ``args``, ``comment``, ``includes`` and ``excludes``
always present), so a profile written here is byte for byte the one KubeVirt writes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Final

from kubevirt_api.view import JSON

ACT_ALLOW: Final = "SCMP_ACT_ALLOW"
ACT_ERRNO: Final = "SCMP_ACT_ERRNO"
OP_NOT_EQUAL: Final = "SCMP_CMP_NE"
OP_EQUAL_TO: Final = "SCMP_CMP_EQ"

# The numbers of the errno names used here. Linux numbers them alike on x86, ARM, s390x and ppc64le
# (only MIPS and SPARC differ, and KubeVirt ships for neither).
ERRNO_NUMBERS: Final = {"EPERM": 1, "EINVAL": 22, "ENOSYS": 38}


class Arch(StrEnum):
    """libseccomp's architecture names (those the default profile's architecture map uses)."""

    X86 = "SCMP_ARCH_X86"
    X86_64 = "SCMP_ARCH_X86_64"
    X32 = "SCMP_ARCH_X32"
    ARM = "SCMP_ARCH_ARM"
    AARCH64 = "SCMP_ARCH_AARCH64"
    MIPS = "SCMP_ARCH_MIPS"
    MIPS64 = "SCMP_ARCH_MIPS64"
    MIPS64N32 = "SCMP_ARCH_MIPS64N32"
    MIPSEL = "SCMP_ARCH_MIPSEL"
    MIPSEL64 = "SCMP_ARCH_MIPSEL64"
    MIPSEL64N32 = "SCMP_ARCH_MIPSEL64N32"
    S390 = "SCMP_ARCH_S390"
    S390X = "SCMP_ARCH_S390X"


@dataclass(frozen=True)
class Arg:
    """A condition on one argument of the syscall."""

    index: int
    value: int
    op: str
    value_two: int = 0

    def to_json(self) -> JSON:
        return {"index": self.index, "value": self.value, "valueTwo": self.value_two, "op": self.op}


@dataclass(frozen=True)
class Filter:
    """When a rule applies: the container holds all of ``caps`` / runs on one of ``arches`` (Go names)."""

    caps: tuple[str, ...] = ()
    arches: tuple[str, ...] = ()

    def to_json(self) -> JSON:
        out: JSON = {}
        if self.caps:
            out["caps"] = list(self.caps)
        if self.arches:
            out["arches"] = list(self.arches)
        return out


@dataclass(frozen=True)
class Rule:
    """The action taken for a group of syscalls. ``args`` of None is written as ``null`` (a rule with no
    conditions either way; containers/common leaves it so on one rule), ``errno`` names the error an
    ``SCMP_ACT_ERRNO`` rule returns."""

    names: tuple[str, ...]
    action: str
    args: tuple[Arg, ...] | None = ()
    includes: Filter = Filter()
    excludes: Filter = Filter()
    errno: str = ""
    comment: str = ""

    def without(self, name: str) -> Rule:
        return replace(self, names=tuple(n for n in self.names if n != name))

    def to_json(self) -> JSON:
        out: JSON = {}
        if self.names:
            out["names"] = list(self.names)
        out["action"] = self.action
        out["args"] = None if self.args is None else [arg.to_json() for arg in self.args]
        out["comment"] = self.comment
        out["includes"] = self.includes.to_json()
        out["excludes"] = self.excludes.to_json()
        if self.errno:
            out["errnoRet"] = ERRNO_NUMBERS[self.errno]
            out["errno"] = self.errno
        return out


@dataclass(frozen=True)
class Architecture:
    """A native architecture and the ones its kernel also runs (the filter covers them all)."""

    arch: Arch
    sub_arches: tuple[Arch, ...]

    def to_json(self) -> JSON:
        return {"architecture": self.arch.value, "subArchitectures": [sub.value for sub in self.sub_arches]}


@dataclass(frozen=True)
class Profile:
    default_action: str
    default_errno: str
    arch_map: tuple[Architecture, ...]
    rules: tuple[Rule, ...]

    def to_json(self) -> JSON:
        return {
            "defaultAction": self.default_action,
            "defaultErrnoRet": ERRNO_NUMBERS[self.default_errno],
            "defaultErrno": self.default_errno,
            "archMap": [arch.to_json() for arch in self.arch_map],
            "syscalls": [rule.to_json() for rule in self.rules],
        }

    def serialise(self) -> bytes:
        """Compact JSON without a trailing newline, as Go's ``json.Marshal`` writes it."""
        return json.dumps(self.to_json(), separators=(",", ":")).encode()
