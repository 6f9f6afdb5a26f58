"""Protocol version negotiation: each side lists what it speaks, the client uses the highest common one."""

from __future__ import annotations

from collections.abc import Iterable

SUPPORTED_CMD_VERSIONS: tuple[int, ...] = (1,)
SUPPORTED_NOTIFY_VERSIONS: tuple[int, ...] = (1,)


class NoCommonVersionError(Exception):
    """The two sides share no protocol version."""


def highest_common_version(ours: Iterable[int], theirs: Iterable[int]) -> int:
    common = set(ours) & set(theirs)
    if not common:
        raise NoCommonVersionError(
            f"no compatible protocol version: we support {sorted(set(ours))}, the peer {sorted(set(theirs))}"
        )
    return max(common)
