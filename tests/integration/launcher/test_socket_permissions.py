"""The command socket and its directory get fixed permissions whatever the umask."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from kubevirt.handler_launcher_com.server import register_cmd_info, serve_unix


@pytest.fixture
def open_umask() -> Iterator[None]:
    previous = os.umask(0)
    yield
    os.umask(previous)


@pytest.mark.usefixtures("open_umask")
def test_socket_and_directory_are_closed_to_others_under_umask_0(tmp_path: Path) -> None:
    socket = tmp_path / "sockets" / "launcher-init-sock"
    server: grpc.Server = serve_unix(socket, register_cmd_info)
    try:
        assert stat.S_IMODE(socket.parent.stat().st_mode) == 0o750
        assert stat.S_IMODE(socket.stat().st_mode) == 0o660
    finally:
        server.stop(None)


@pytest.mark.usefixtures("open_umask")
def test_an_existing_directory_of_ours_is_closed_too(tmp_path: Path) -> None:
    folder = tmp_path / "sockets"
    folder.mkdir(mode=0o777)
    server = serve_unix(folder / "launcher-init-sock", register_cmd_info)
    try:
        assert stat.S_IMODE(folder.stat().st_mode) == 0o750
    finally:
        server.stop(None)
