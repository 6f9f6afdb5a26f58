"""KubeVirt's seccomp profile loaded into a real process by libseccomp: the process runs, userfaultfd
(post-copy migration) is allowed, and what the profile refuses is refused with its errno."""

from __future__ import annotations

import errno
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kubevirt.virt_handler.seccomp import profile_bytes
from kubevirt.virt_handler.seccomp.default_profile import default_profile

LOADER = Path(__file__).with_name("seccomp_loader.py")

# libseccomp (Debian's libseccomp2) is installed by hack/setup: the profile is checked by the library the
# container runtimes use, never skipped.
# Each call made with arguments that do nothing: its errno (0 for success) shows who answered.
PROBE = r"""
import ctypes, ctypes.util, json, os
libc = ctypes.CDLL(None, use_errno=True)
seccomp = ctypes.CDLL(ctypes.util.find_library("seccomp"))
seccomp.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]

def call(name, *args):
    number = seccomp.seccomp_syscall_resolve_name(name.encode())
    ctypes.set_errno(0)
    result = libc.syscall(number, *args)
    if result >= 0:
        if name == "userfaultfd":
            os.close(result)
        return 0
    return ctypes.get_errno()

UFFD_USER_MODE_ONLY = 1  # allowed to any user, whatever vm.unprivileged_userfaultfd says
with open("/proc/self/status") as status:
    mode = next(line.split()[1] for line in status if line.startswith("Seccomp:"))
print(json.dumps({
    "seccomp": mode,
    "getpid": call("getpid"),
    "userfaultfd": call("userfaultfd", os.O_CLOEXEC | os.O_NONBLOCK | UFFD_USER_MODE_ONLY),
    "vmsplice": call("vmsplice", -1, None, 0, 0),
    "add_key": call("add_key", None, None, None, 0, 0),
}))
"""


def _probe(profile: bytes | None, tmp_path: Path, caps: str = "") -> dict[str, Any]:
    command = [sys.executable, "-c", PROBE]
    if profile is not None:
        path = tmp_path / "profile.json"
        path.write_bytes(profile)
        command = [sys.executable, str(LOADER), str(path), caps, *command]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


@pytest.fixture(scope="module")
def unfiltered(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    result = _probe(None, tmp_path_factory.mktemp("plain"))
    if result["userfaultfd"] != 0:
        pytest.skip(f"this kernel refuses userfaultfd anyway: {errno.errorcode[result['userfaultfd']]}")
    return result


def _as_written(profile: bytes) -> bytes:
    """As CRI-O reads it (containers/common's format: architecture map, capability filters)."""
    return profile


def _as_oci(profile: bytes) -> bytes:
    """As containerd reads a localhost profile: an OCI ``LinuxSeccomp``, the fields it lacks ignored."""
    full = json.loads(profile)
    kept = ("names", "action", "errnoRet", "args")
    return json.dumps(
        {
            "defaultAction": full["defaultAction"],
            "defaultErrnoRet": full["defaultErrnoRet"],
            "syscalls": [{k: v for k, v in rule.items() if k in kept} for rule in full["syscalls"]],
        }
    ).encode()


@pytest.mark.parametrize("read", [_as_written, _as_oci], ids=["cri-o", "containerd"])
def test_a_process_runs_under_kubevirts_profile_with_userfaultfd(
    read: Callable[[bytes], bytes], tmp_path: Path, unfiltered: dict[str, Any]
) -> None:
    filtered = _probe(read(profile_bytes()), tmp_path)
    assert unfiltered["seccomp"] == "0"
    assert filtered["seccomp"] == "2"  # a filter is in force
    assert filtered["getpid"] == 0
    assert filtered["userfaultfd"] == 0
    # Refused by the profile's EPERM rule (without a filter the bad descriptor is the answer).
    assert unfiltered["vmsplice"] == errno.EBADF
    assert filtered["vmsplice"] == errno.EPERM
    # Named nowhere: the default action, ENOSYS.
    assert unfiltered["add_key"] != errno.ENOSYS
    assert filtered["add_key"] == errno.ENOSYS


def test_the_containers_default_alone_refuses_userfaultfd(tmp_path: Path, unfiltered: dict[str, Any]) -> None:
    """What KubeVirt's change is for: under the unchanged default, post-copy could not work."""
    filtered = _probe(default_profile().serialise(), tmp_path)
    assert filtered["getpid"] == 0
    assert filtered["userfaultfd"] == errno.EPERM


def test_a_profile_libseccomp_refuses_never_runs_the_command(tmp_path: Path) -> None:
    """The loader is a real check: a condition on an argument past the sixth, which libseccomp refuses,
    stops it before the command runs."""
    broken = json.loads(profile_bytes())
    broken["syscalls"].append(
        {
            "names": ["getpid"],
            "action": "SCMP_ACT_ALLOW",
            "args": [{"index": 9, "value": 0, "op": "SCMP_CMP_EQ"}],
        }
    )
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(broken))
    done = subprocess.run(
        [sys.executable, str(LOADER), str(path), "", sys.executable, "-c", "print('ran')"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 3
    assert "ran" not in done.stdout
