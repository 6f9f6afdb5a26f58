"""The export token both virt-controller and virtctl make: KubeVirt's 20 random letters and digits."""

from __future__ import annotations

import re

from kubevirt.export.token import new_token


def test_a_token_is_twenty_letters_and_digits() -> None:
    tokens = {new_token() for _ in range(200)}
    assert all(re.fullmatch(r"[0-9A-Za-z]{20}", token) for token in tokens)
    assert len(tokens) == 200  # random, not repeated
    assert len(set("".join(tokens))) > 36  # both cases and digits are drawn
