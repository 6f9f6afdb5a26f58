"""Run a command under a seccomp profile in containers/common's JSON format, through libseccomp itself:

    python seccomp_loader.py PROFILE CAPS COMMAND...

CAPS is a comma-separated capability set (possibly empty) that the profile's ``includes``/``excludes``
are judged against. The profile is applied as a container runtime applies it: the native architecture
and the sub-architectures its ``archMap`` entry lists, rules for another architecture or capability set
left out, syscall names this libseccomp does not know skipped, a rule's conditions ANDed when they name
distinct arguments and one rule per condition otherwise. Any call libseccomp refuses is an error (exit
3), so a profile it cannot take never runs the command.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import json
import os
import sys
from typing import Any

ACT_ALLOW = 0x7FFF0000
ACT_ERRNO = 0x00050000
EPERM = 1
NR_SCMP_ERROR = -1
OPERATORS = {
    "SCMP_CMP_NE": 1,
    "SCMP_CMP_LT": 2,
    "SCMP_CMP_LE": 3,
    "SCMP_CMP_EQ": 4,
    "SCMP_CMP_GE": 5,
    "SCMP_CMP_GT": 6,
    "SCMP_CMP_MASKED_EQ": 7,
}
# Go's names of the architectures a libseccomp token stands for (the profile's ``arches`` filters).
GO_ARCHES = {"x86_64": "amd64", "x86": "386", "x32": "x32", "aarch64": "arm64", "s390x": "s390x"}


class ArgCmp(ctypes.Structure):
    _fields_ = [
        ("arg", ctypes.c_uint),
        ("op", ctypes.c_int),
        ("datum_a", ctypes.c_uint64),
        ("datum_b", ctypes.c_uint64),
    ]


class LoadError(Exception):
    pass


def libseccomp() -> ctypes.CDLL:
    name = ctypes.util.find_library("seccomp")
    if name is None:
        raise LoadError("libseccomp not found")
    lib = ctypes.CDLL(name, use_errno=True)
    lib.seccomp_init.restype = ctypes.c_void_p
    lib.seccomp_init.argtypes = [ctypes.c_uint32]
    lib.seccomp_arch_native.restype = ctypes.c_uint32
    lib.seccomp_arch_resolve_name.restype = ctypes.c_uint32
    lib.seccomp_arch_resolve_name.argtypes = [ctypes.c_char_p]
    lib.seccomp_arch_add.argtypes = [ctypes.c_void_p, ctypes.c_uint32]
    lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
    lib.seccomp_rule_add_array.argtypes = [
        ctypes.c_void_p,
        ctypes.c_uint32,
        ctypes.c_int,
        ctypes.c_uint,
        ctypes.POINTER(ArgCmp),
    ]
    lib.seccomp_load.argtypes = [ctypes.c_void_p]
    return lib


def _check(rc: int, what: str) -> None:
    if rc < 0:
        raise LoadError(f"libseccomp refused {what}: {os.strerror(-rc)}")


def _arch_token(lib: ctypes.CDLL, name: str) -> int:
    token: int = lib.seccomp_arch_resolve_name(name.removeprefix("SCMP_ARCH_").lower().encode())
    if token == 0:
        raise LoadError(f"unknown architecture {name}")
    return token


def _action(rule: dict[str, Any]) -> int:
    if rule["action"] == "SCMP_ACT_ALLOW":
        return ACT_ALLOW
    if rule["action"] == "SCMP_ACT_ERRNO":
        return ACT_ERRNO | int(rule.get("errnoRet", EPERM))
    raise LoadError(f"action {rule['action']} is not supported here")


def _applies(rule: dict[str, Any], caps: set[str], go_arch: str) -> bool:
    includes, excludes = rule.get("includes") or {}, rule.get("excludes") or {}
    if includes.get("arches") and go_arch not in includes["arches"]:
        return False
    if go_arch in (excludes.get("arches") or []):
        return False
    if not set(includes.get("caps") or []) <= caps:
        return False
    return not set(excludes.get("caps") or []) & caps


def _conditions(rule: dict[str, Any]) -> list[list[ArgCmp]]:
    args = rule.get("args") or []
    cmps = [ArgCmp(arg["index"], OPERATORS[arg["op"]], arg["value"], arg.get("valueTwo", 0)) for arg in args]
    if len({arg["index"] for arg in args}) == len(args):
        return [cmps]
    return [[cmp] for cmp in cmps]


def load(profile: dict[str, Any], caps: set[str]) -> None:
    lib = libseccomp()
    default = ACT_ERRNO | int(profile.get("defaultErrnoRet", EPERM))
    if profile["defaultAction"] != "SCMP_ACT_ERRNO":
        raise LoadError(f"default action {profile['defaultAction']} is not supported here")
    ctx = lib.seccomp_init(default)
    if not ctx:
        raise LoadError("seccomp_init failed")
    native = lib.seccomp_arch_native()
    native_name = next(
        (name for name in GO_ARCHES if lib.seccomp_arch_resolve_name(name.encode()) == native), ""
    )
    for entry in profile.get("archMap") or []:
        if _arch_token(lib, entry["architecture"]) != native:
            continue
        for sub in entry.get("subArchitectures") or []:
            rc = lib.seccomp_arch_add(ctx, _arch_token(lib, sub))
            if rc != -17:  # EEXIST: already in the filter
                _check(rc, f"architecture {sub}")
    for rule in profile["syscalls"]:
        if not _applies(rule, caps, GO_ARCHES.get(native_name, "")):
            continue
        action = _action(rule)
        if action == default:
            continue
        for name in rule.get("names") or []:
            number = lib.seccomp_syscall_resolve_name(name.encode())
            if number == NR_SCMP_ERROR:
                continue  # not a syscall this libseccomp knows of: a runtime skips it too
            for conditions in _conditions(rule):
                array = (ArgCmp * len(conditions))(*conditions)
                _check(lib.seccomp_rule_add_array(ctx, action, number, len(conditions), array), name)
    _check(lib.seccomp_load(ctx), "loading the filter")


def main(argv: list[str]) -> None:
    path, caps, *command = argv
    with open(path) as source:
        profile = json.load(source)
    try:
        load(profile, {cap for cap in caps.split(",") if cap})
    except LoadError as err:
        print(err, file=sys.stderr)
        raise SystemExit(3) from None
    os.execv(command[0], command)


if __name__ == "__main__":
    main(sys.argv[1:])
