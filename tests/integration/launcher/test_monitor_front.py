"""virt-launcher-monitor's static front: with its file capability it hands NET_BIND_SERVICE to the monitor
it becomes, in a process started as KubeVirt's non-root compute container is (uid 107, no_new_privs,
bounded by the one capability the pod adds)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "hack" / "cluster"))

from localcluster import recipe  # noqa: E402

NET_BIND_SERVICE = 1 << 10
# struct vfs_cap_data, revision 2, effective bit set: NET_BIND_SERVICE permitted (what setcap writes).
FILE_CAPABILITY = (0x02000001).to_bytes(4, "little") + NET_BIND_SERVICE.to_bytes(4, "little") + bytes(12)
REPORT = "print(open('/proc/self/status').read())"
SYSTEM_PYTHON = "/usr/bin/python3"


def _front(directory: Path, monitor: str) -> Path:
    output = directory / "virt-launcher-monitor"
    command = recipe.MONITOR_FRONT_COMMAND.replace(f"{recipe.VENV}/bin/virt-launcher-monitor", monitor)
    subprocess.run(
        ["sh", "-ec", command.format(output=output, source=REPO / recipe.MONITOR_FRONT_SOURCE)], check=True
    )
    return output


def _capabilities(output: str) -> dict[str, int]:
    fields = dict(line.split(":\t", 1) for line in output.splitlines() if line.startswith("Cap"))
    return {name: int(value, 16) for name, value in fields.items()}


@pytest.fixture
def directory() -> Iterator[Path]:
    # The non-root user must reach the program: a directory only root can enter would stop the exec.
    path = Path(tempfile.mkdtemp(prefix="front-", dir="/tmp"))
    os.chmod(path, 0o755)
    yield path
    shutil.rmtree(path)


def test_a_non_root_container_keeps_net_bind_service_across_the_exec_into_the_monitor(
    directory: Path,
) -> None:
    # The "monitor" here reports its own capabilities: Python, as the real one is.
    script = directory / "monitor"
    script.write_text(f"#!{SYSTEM_PYTHON} -I\n{REPORT}\n")  # the venv's may sit where 107 cannot go
    script.chmod(0o755)
    front = _front(directory, str(script))
    os.setxattr(front, "security.capability", FILE_CAPABILITY)
    container = [
        "setpriv", "--reuid", "107", "--regid", "107", "--clear-groups", "--inh-caps=-all",
        "--bounding-set", "-all,+net_bind_service", "--no-new-privs",
    ]  # fmt: skip
    result = subprocess.run([*container, str(front)], capture_output=True, text=True, check=True)
    capabilities = _capabilities(result.stdout)
    assert capabilities["CapEff"] == NET_BIND_SERVICE
    assert capabilities["CapAmb"] == NET_BIND_SERVICE  # what the monitor passes on to the launcher

    os.removexattr(front, "security.capability")  # a plain binary: the monitor gets nothing
    result = subprocess.run([*container, str(front)], capture_output=True, text=True, check=True)
    assert _capabilities(result.stdout)["CapEff"] == 0
