"""A non-root monitor and launcher pass NET_BIND_SERVICE on to their children as KubeVirt's do: ambient,
so that it survives the child's exec (the launcher's DHCP server binds port 67 with it)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytestmark = [
    pytest.mark.timeout(60),
    pytest.mark.skipif(os.geteuid() != 0, reason="starts processes as another user"),
]

# Run as uid 107 holding NET_BIND_SERVICE but, as after a file capability, not as an ambient one: each
# line is a child's ambient set, started plainly, through ambient_raiser, then by the monitor.
SCRIPT = """
import ctypes, subprocess
from kubevirt.virt_launcher import monitor
from kubevirt.virt_launcher.ambient_caps import ambient_raiser

ctypes.CDLL(None).prctl(47, 4, 0, 0, 0)  # PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL
grep = ["grep", "CapAmb", "/proc/self/status"]
subprocess.run(grep)
subprocess.run(grep, preexec_fn=ambient_raiser())
monitor.run(grep[1:], launcher="grep")
"""


def test_children_of_a_non_root_process_keep_net_bind_service_only_when_raised() -> None:
    result = subprocess.run(
        [
            *("setpriv", "--reuid", "107", "--regid", "107", "--clear-groups", "--no-new-privs"),
            *("--inh-caps=-all,+net_bind_service", "--ambient-caps", "+net_bind_service"),
            *("--bounding-set", "-all,+net_bind_service"),
            sys.executable,
            "-c",
            SCRIPT,
        ],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    ambient = [line.split()[1] for line in result.stdout.splitlines() if line.startswith("CapAmb")]
    assert ambient == ["0000000000000000", "0000000000000400", "0000000000000400"]
