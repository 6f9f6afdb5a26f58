"""The upload's progress line: pb v3's ``Full`` template in bytes, as KubeVirt's virtctl shows it."""

from __future__ import annotations

import pytest

from kubevirt.virtctl.imageupload.progress import UploadBar, bar_cells, elapsed_text


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_the_line_fills_the_width_and_ends_with_the_elapsed_time() -> None:
    clock = Clock()
    drawn: list[str] = []
    bar = UploadBar(drawn.append, 1024, terminal=True, width=60, clock=clock)
    assert bar.render(finished=False) == "0 B / 1.00 KiB [" + "_" * 29 + "] 0.00% ? p/s ?"
    clock.now = 1.0
    bar.add(512)
    assert bar.render(finished=False) == "512 B / 1.00 KiB [-------->________] 50.00% 512 B p/s ETA 1s"
    clock.now = 2.0
    bar.add(512)
    bar.draw(finished=True)
    line = "1.00 KiB / 1.00 KiB [" + "-" * 15 + "] 100.00% 512 B p/s 2.0s"
    assert drawn == ["\r" + line.ljust(60) + "\n"]


def test_a_retry_starts_the_count_again() -> None:
    bar = UploadBar(lambda _text: None, 100, terminal=False, width=80, clock=Clock())
    bar.add(60)
    bar.set_current(0)
    assert bar.render(finished=False).startswith("0 B / 100 B [")


def test_an_empty_file_has_no_percentage() -> None:
    bar = UploadBar(lambda _text: None, 0, terminal=False, width=40, clock=Clock())
    assert bar.render(finished=False) == "0 B [" + "_" * 23 + "] ?% ? p/s ?"


@pytest.mark.parametrize(
    ("cells", "current", "finished", "drawn"),
    [
        (1, 0, False, "["),
        (2, 0, False, "[]"),
        (7, 0, False, "[_____]"),
        (7, 1, False, "[>____]"),
        (7, 50, False, "[-->__]"),
        (7, 100, False, "[---->]"),
        (7, 100, True, "[-----]"),
    ],
)
def test_bar_cells(cells: int, current: int, finished: bool, drawn: str) -> None:
    assert bar_cells(current, 100, cells, finished) == drawn


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0, "0s"),
        (0.05, "100ms"),
        (0.34, "300ms"),
        (1.04, "1.0s"),
        (2.25, "2.3s"),
        (9.96, "10s"),
        (75.4, "1m15s"),
    ],
)
def test_elapsed_time_as_pb_shows_it(seconds: float, text: str) -> None:
    assert elapsed_text(round(seconds * 1e9)) == text
