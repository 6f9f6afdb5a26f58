"""Lookups inside a tree stay inside it, whatever its symlinks say."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kubevirt import safepath


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "outside").write_text("host secret")
    root = tmp_path / "root"
    (root / "..2026_12_01").mkdir(parents=True)
    (root / "..2026_12_01" / "key").write_text("value")
    (root / "..data").symlink_to("..2026_12_01")
    (root / "key").symlink_to("..data/key")  # how the kubelet lays out a configMap volume
    (root / "escape").symlink_to(tmp_path / "outside")
    (root / "dotdot").symlink_to("../outside")
    return root


def test_kubelet_links_inside_the_root_are_followed(tree: Path) -> None:
    assert safepath.read_file(tree, "key", limit=100) == b"value"


@pytest.mark.parametrize("name", ["escape", "dotdot", "../outside", "/../outside"])
def test_nothing_outside_the_root_is_reached(tree: Path, name: str) -> None:
    # An absolute or climbing link resolves against the root: the host's file is never read.
    with pytest.raises(FileNotFoundError):
        safepath.read_file(tree, name, limit=100)


def test_no_symlinks_refuses_any_link(tree: Path) -> None:
    with pytest.raises(safepath.UnsafePathError):
        safepath.read_file(tree, "key", limit=100, resolve=safepath.NO_SYMLINKS)
    assert safepath.read_file(tree, "..2026_12_01/key", limit=100, resolve=safepath.NO_SYMLINKS) == b"value"


def test_a_file_beyond_the_limit_is_refused(tree: Path) -> None:
    with pytest.raises(ValueError, match="more than the 3"):
        safepath.read_file(tree, "key", limit=3)


def test_only_regular_files_are_read(tree: Path) -> None:
    os.mkfifo(tree / "fifo")
    with pytest.raises(safepath.UnsafePathError, match="not a regular file"):
        safepath.read_file(tree, "fifo", limit=100)  # would block forever if opened blocking and read


@pytest.mark.parametrize(
    ("name", "plain"), [("disk", True), ("", False), (".", False), ("..", False), ("a/b", False)]
)
def test_plain_name(name: str, plain: bool) -> None:
    assert safepath.plain_name(name) is plain
