"""Go's path cleaning, as its mux applies it before redirecting."""

from __future__ import annotations

import pytest

from kubevirt.service.gopaths import clean_path


@pytest.mark.parametrize(
    ("path", "clean"),
    [
        ("/healthz", "/healthz"),
        ("//healthz", "/healthz"),
        ("///a//b", "/a/b"),
        ("/a/./b", "/a/b"),
        ("/a/../b/", "/b/"),
        ("/../..", "/"),
        ("", "/"),
        ("a/b", "/a/b"),
        ("/apis/", "/apis/"),
    ],
)
def test_paths_clean_as_go_cleans_them(path: str, clean: str) -> None:
    assert clean_path(path) == clean
