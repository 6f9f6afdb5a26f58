"""The launcher's reaper: orphans are reaped, children it was told about keep their exit status.

Each case runs in a process of its own, since a reaper reaps every child of the process it runs in.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.timeout(60)

# A child that exits before its Popen has returned to the caller (here: the caller is slow to get
# control back) must still report its own status, not one the reaper made up by reaping it first.
_QUICK_EXIT = textwrap.dedent(
    """
    import subprocess, time
    from kubevirt.virt_launcher import reaper

    class SlowToReturn(subprocess.Popen):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            time.sleep(0.3)

    reaper.start_reaping(interval=0.01)
    codes = []
    for _ in range(3):
        process = reaper.start_owned(lambda: SlowToReturn(["sh", "-c", "exit 3"]))
        codes.append(process.wait())
        reaper.forget(process.pid)
    print(codes)
    """
)

# An orphan adopted by a subreaper is reaped: it does not linger as a zombie.
_ORPHAN = textwrap.dedent(
    """
    import os, subprocess, time
    from kubevirt.virt_launcher import reaper

    assert reaper.become_subreaper()
    reaper.start_reaping(interval=0.01)
    out = subprocess.run(["sh", "-c", "sleep 0.2 & echo $!"], capture_output=True, text=True, check=True)
    orphan = int(out.stdout)
    deadline = time.monotonic() + 10
    while os.path.exists(f"/proc/{orphan}") and time.monotonic() < deadline:
        time.sleep(0.05)
    print(os.path.exists(f"/proc/{orphan}"))
    """
)


def run(script: str) -> str:
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout


def test_an_owned_child_keeps_its_exit_status() -> None:
    assert run(_QUICK_EXIT).strip() == "[3, 3, 3]"


def test_adopted_orphans_are_reaped() -> None:
    assert run(_ORPHAN).strip() == "False"
