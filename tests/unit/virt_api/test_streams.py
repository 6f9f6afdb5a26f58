"""Console and VNC: which VMIs may be streamed, and how VNC's preserveSession is read."""

from __future__ import annotations

from typing import Any

import pytest

from kubevirt.virt_api.rest.status import StatusError
from kubevirt.virt_api.rest.streams import check_console, check_vnc, preserve_session


def vmi(phase: str, **devices: Any) -> dict[str, Any]:
    return {"metadata": {"name": "vmi"}, "spec": {"domain": {"devices": devices}}, "status": {"phase": phase}}


@pytest.mark.parametrize(
    ("check", "obj", "code", "message"),
    [
        (
            check_console,
            vmi("Running", autoattachSerialConsole=False),
            400,
            "No serial consoles are present.",
        ),
        (
            check_console,
            vmi("Failed"),
            409,
            'Operation cannot be fulfilled on virtualmachineinstance.kubevirt.io "vmi": '
            "VMI is in failed status",
        ),
        (check_console, vmi("Scheduled"), 400, "VMI is not running"),
        (check_vnc, vmi("Running", autoattachGraphicsDevice=False), 400, "No graphics devices are present."),
        (check_vnc, vmi("Failed"), 400, "VMI is not running"),
    ],
)
def test_refusals(check: Any, obj: dict[str, Any], code: int, message: str) -> None:
    with pytest.raises(StatusError) as caught:
        check(obj)
    assert (caught.value.code, caught.value.message) == (code, message)


def test_a_running_vmi_streams() -> None:
    check_console(vmi("Running"))
    check_vnc(vmi("Running", autoattachSerialConsole=False))


def test_preserve_session_is_read_as_go_reads_booleans() -> None:
    assert [preserve_session(v) for v in ("true", "1", "T", "yes", "", None, "false")] == [
        True,
        True,
        True,
        False,
        False,
        False,
        False,
    ]
