"""Archive contents land under the claim's folder, whether Python has the ``data`` filter or not."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from kubevirt.cdi_importer.archive import extract_all


def _archive(*members: tuple[tarfile.TarInfo, bytes]) -> io.BytesIO:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for info, data in members:
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data) if data else None)
    buffer.seek(0)
    return buffer


def _file(name: str, data: bytes = b"x", mode: int = 0o644) -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.mode = mode
    return info, data


def _link(name: str, target: str) -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.type = tarfile.SYMTYPE
    info.linkname = target
    return info, b""


@pytest.fixture(params=["data filter", "member checks"])
def without_filter(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> bool:
    if request.param == "member checks":
        monkeypatch.delattr(tarfile, "data_filter", raising=False)
        return True
    if not hasattr(tarfile, "data_filter"):
        pytest.skip("this Python has no data filter")  # the member checks still run
    return False


def test_files_folders_and_inner_links_are_extracted(tmp_path: Path, without_filter: bool) -> None:
    stream = _archive(
        _file("disk.img", b"data", 0o4777), _file("sub/notes.txt"), _link("sub/alias", "notes.txt")
    )
    with tarfile.open(fileobj=stream, mode="r|") as archive:
        extract_all(archive, tmp_path)
    assert (tmp_path / "disk.img").read_bytes() == b"data"
    assert (tmp_path / "disk.img").stat().st_mode & 0o7777 == 0o755  # no set-id bits, no group/other write
    assert (tmp_path / "sub" / "alias").read_bytes() == b"x"


@pytest.mark.parametrize(
    "member",
    [
        _file("../escape"),
        _file("sub/../../escape"),
        _link("out", "../../etc/passwd"),
        _link("abs", "/etc/passwd"),
    ],
)
def test_members_reaching_outside_are_refused(
    tmp_path: Path, without_filter: bool, member: tuple[tarfile.TarInfo, bytes]
) -> None:
    destination = tmp_path / "data"
    destination.mkdir()
    with tarfile.open(fileobj=_archive(member), mode="r|") as archive, pytest.raises(tarfile.TarError):
        extract_all(archive, destination)
    assert not (tmp_path / "escape").exists()


def test_an_absolute_name_lands_inside(tmp_path: Path, without_filter: bool) -> None:
    with tarfile.open(fileobj=_archive(_file("/etc/inside")), mode="r|") as archive:
        extract_all(archive, tmp_path)
    assert (tmp_path / "etc" / "inside").read_bytes() == b"x"


def test_a_device_node_is_refused(tmp_path: Path, without_filter: bool) -> None:
    info = tarfile.TarInfo("dev")
    info.type = tarfile.CHRTYPE
    with tarfile.open(fileobj=_archive((info, b"")), mode="r|") as archive, pytest.raises(tarfile.TarError):
        extract_all(archive, tmp_path)
