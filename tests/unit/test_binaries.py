"""Every binary starts, answers --help and --version, and logs KubeVirt-shaped JSON."""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from kubevirt import service
from kubevirt.log import configure, get_logger
from kubevirt.service import binary
from kubevirt.version import get_version

BINARIES = [
    "virt-operator",
    "cdi-controller",
    "cdi-importer",
    "cdi-apiserver",
    "cdi-uploadproxy",
    "cdi-uploadserver",
    "cdi-cloner",
    "virt-api",
    "virt-controller",
    "virt-exportproxy",
    "virt-exportserver",
    "virt-handler",
    "virt-launcher",
    "virtctl",
    "node-labeller",
]


def _script(binary: str) -> str | None:
    """The console script beside this interpreter (the project's environment, whatever PATH says)."""
    return shutil.which(binary, path=str(Path(sys.executable).parent))


@pytest.mark.parametrize("binary", BINARIES)
def test_version_flag_prints_project_version(binary: str) -> None:
    exe = _script(binary)
    assert exe, f"{binary} is not installed as a console script"
    result = subprocess.run([exe, "--version"], capture_output=True, text=True, check=True, timeout=60)
    assert result.stdout.strip() == f"{binary} {get_version()}"


@pytest.mark.parametrize("binary", BINARIES)
def test_help_describes_the_binary(binary: str) -> None:
    exe = _script(binary)
    assert exe
    result = subprocess.run([exe, "--help"], capture_output=True, text=True, check=True, timeout=60)
    assert result.stdout.startswith("Usage:")
    assert "--version" in result.stdout


def test_virtctl_version_subcommand() -> None:
    exe = _script("virtctl")
    assert exe
    result = subprocess.run(
        [exe, "version", "--client"], capture_output=True, text=True, check=True, timeout=60
    )
    assert result.stdout.startswith(f'Client Version: version.Info{{GitVersion:"v{get_version()}", ')


def test_bad_flag_is_a_usage_error_not_a_traceback() -> None:
    exe = _script("virt-handler")
    assert exe
    result = subprocess.run([exe, "--no-such-flag"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert "No such option" in result.stderr
    assert "Traceback" not in result.stderr


def test_log_lines_carry_kubevirts_fields() -> None:
    stream = io.StringIO()
    configure("virt-handler", stream=stream)
    get_logger(kind="VirtualMachineInstance", namespace="ns", name="vm1", uid="u-1").info("synced")
    record = json.loads(stream.getvalue().splitlines()[-1])
    assert record["component"] == "virt-handler"
    assert record["level"] == "info"
    assert record["msg"] == "synced"
    assert record["pos"].startswith("test_binaries.py:")
    assert record["timestamp"].endswith("Z")
    assert (record["kind"], record["namespace"], record["name"], record["uid"]) == (
        "VirtualMachineInstance",
        "ns",
        "vm1",
        "u-1",
    )


def test_debug_is_filtered_below_verbosity_three() -> None:
    stream = io.StringIO()
    configure("virt-api", verbosity=2, stream=stream)
    get_logger().debug("hidden")
    assert stream.getvalue() == ""
    configure("virt-api", verbosity=4, stream=stream)
    get_logger().debug("shown")
    assert json.loads(stream.getvalue())["level"] == "debug"


@pytest.mark.parametrize(("argv", "verbosity"), [(["-v", "3"], 3), (["-v=4"], 4), (["-v5"], 5), ([], None)])
def test_verbosity_is_read_in_go_flag_spellings_too(argv: list[str], verbosity: int | None) -> None:
    seen: list[int | None] = []

    @binary("probe", "Records the verbosity logging was configured with.")
    def probe() -> None:
        pass

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(service, "configure_logging", lambda _c, verbosity: seen.append(verbosity))
        result = CliRunner().invoke(probe, argv)
    assert result.exit_code == 0, result.output
    assert seen == [verbosity]


def test_a_verbosity_that_is_no_number_is_refused() -> None:
    @binary("probe", "Never runs.")
    def probe() -> None:
        pass

    result = CliRunner().invoke(probe, ["-v=lots"])
    assert result.exit_code == 2
    assert "'lots' is not a valid integer" in result.output
