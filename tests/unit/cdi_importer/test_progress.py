"""The progress counter only rises, and reads as CDI's controller scrapes it."""

from __future__ import annotations

import io
import re

from prometheus_client import generate_latest

from kubevirt.cdi_importer.progress import CountingReader, Progress

# CDI's controller's pattern (controller/common/util.go), for the owner's UID.
SCRAPE = re.compile(r'kubevirt_cdi_import_progress_total\{ownerUID="uid-1"\} (\d{1,3}\.?\d*)')


def _scraped(progress: Progress) -> float:
    match = SCRAPE.search(generate_latest(progress.registry).decode())
    assert match, generate_latest(progress.registry).decode()
    return float(match.group(1))


def test_bytes_read_of_a_known_length_drive_the_percentage() -> None:
    progress = Progress("uid-1")
    reader = CountingReader(io.BytesIO(bytes(1000)), 1000, progress)
    reader.read(250)
    assert _scraped(progress) == 25.0
    reader.read()
    assert _scraped(progress) == 100.0


def test_lower_values_and_values_over_100_do_not_count() -> None:
    progress = Progress("uid-1")
    progress.advance(40.5)
    progress.advance(12.0)  # qemu-img's own percentage starting again
    assert _scraped(progress) == 40.5
    progress.advance(250.0)
    assert _scraped(progress) == 100.0


def test_an_unknown_length_leaves_the_progress_alone() -> None:
    progress = Progress("uid-1")
    CountingReader(io.BytesIO(bytes(10)), 0, progress).read()
    assert _scraped(progress) == 0.0
