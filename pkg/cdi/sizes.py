"""CDI's storage arithmetic: a Filesystem claim is asked for larger than the image by the filesystem
overhead, and an image is made no larger than the room the overhead leaves. Both align to 1 MiB, as
qemu-img rounds sizes up and a misaligned image would not fit what was validated."""

from __future__ import annotations

import math
from typing import Final

ALIGNMENT: Final = 1 << 20
MINIMUM_SIZE: Final = ALIGNMENT  # a DataVolume smaller than 1 MiB is refused


def round_down(number: int, multiple: int = ALIGNMENT) -> int:
    return number // multiple * multiple


def round_up(number: int, multiple: int = ALIGNMENT) -> int:
    return -(-number // multiple) * multiple


def required_space(overhead: float, requested: int) -> int:
    """The claim size that holds an image of ``requested`` bytes on a filesystem costing ``overhead``
    (a fraction, CDI's default 0.06) of the whole."""
    return math.ceil(round_up(requested) * (1 + overhead))


def usable_space(overhead: float, available: int) -> int:
    """The largest image a filesystem of ``available`` bytes holds once ``overhead`` is set aside."""
    return round_down(math.ceil(available / (1 + overhead)))


def parse_overhead(text: str) -> float:
    """A filesystem overhead as CDI writes it ("0.06"): a number from 0 to 1, else ValueError."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0.0 <= value <= 1.0:  # NaN compares false too
        raise ValueError(f"filesystem overhead {text!r} is not a number between 0 and 1")
    return value
