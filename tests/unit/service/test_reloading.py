"""The one piece both TLS contexts follow rotations with: a value rebuilt when its inputs' stamp changes,
looked at no more often than its interval, and kept when a renewal cannot be built yet."""

from __future__ import annotations

import os
import ssl
from pathlib import Path

import pytest
import structlog

from kubevirt.service.reloading import Reloading, modification_times


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _touch(path: Path, text: str, stamp: int) -> None:
    path.write_text(text)
    os.utime(path, ns=(stamp, stamp))


def _reading(path: Path, clock: Clock, interval: float = 5.0) -> Reloading[tuple[int, ...], str]:
    def build(_stamp: tuple[int, ...]) -> str:
        text = path.read_text()
        if text.startswith("half"):
            raise ssl.SSLError("half written")
        return text

    return Reloading(
        lambda: modification_times(path),
        build,
        log=structlog.get_logger(),
        renewed="renewed",
        interval=interval,
        clock=clock,
    )


def test_modification_times_name_each_file_and_fail_on_a_missing_one(tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    _touch(first, "a", 1_000)
    _touch(second, "b", 2_000)
    assert modification_times(first, second) == (1_000, 2_000)
    with pytest.raises(FileNotFoundError):
        modification_times(first, tmp_path / "missing")


def test_a_changed_stamp_rebuilds_only_after_the_interval(tmp_path: Path) -> None:
    path = tmp_path / "cert"
    _touch(path, "one", 1_000)
    clock = Clock()
    value = _reading(path, clock)
    assert value.current() == "one"
    assert value.stamp == (1_000,)
    _touch(path, "two", 2_000)
    clock.now = 4.0
    assert value.current() == "one", "looked at again before the interval passed"
    clock.now = 5.0
    assert value.current() == "two"
    assert value.stamp == (2_000,)


def test_refresh_looks_at_once_and_says_whether_it_renewed(tmp_path: Path) -> None:
    path = tmp_path / "cert"
    _touch(path, "one", 1_000)
    value = _reading(path, Clock())
    assert value.refresh() is False  # the first build is no renewal
    assert value.refresh() is False  # same stamp: nothing rebuilt
    _touch(path, "two", 2_000)
    assert value.refresh() is True
    assert value.in_use == "two"


def test_a_half_written_renewal_keeps_the_value_and_is_retried(tmp_path: Path) -> None:
    path = tmp_path / "cert"
    _touch(path, "one", 1_000)
    value = _reading(path, Clock())
    value.refresh()
    _touch(path, "half", 2_000)
    assert value.refresh() is False
    assert (value.in_use, value.stamp) == ("one", (1_000,))
    _touch(path, "two", 2_000)  # completed with the same stamp as the half-written try
    assert value.refresh() is True
    assert value.in_use == "two"


def test_files_gone_keep_the_value_but_fail_the_first_build(tmp_path: Path) -> None:
    path = tmp_path / "cert"
    _touch(path, "one", 1_000)
    value = _reading(path, Clock())
    value.refresh()
    path.unlink()
    assert value.refresh() is False
    assert value.in_use == "one"
    with pytest.raises(FileNotFoundError):
        _reading(path, Clock()).current()
    with pytest.raises(RuntimeError, match="not built yet"):
        _ = _reading(path, Clock()).in_use
