"""The pods-directory probes never follow a link a launcher pod could plant."""

from __future__ import annotations

from pathlib import Path

from kubevirt.virt_handler.launcher_sockets import (
    is_marked_unresponsive,
    mark_unresponsive,
    pod_dir_exists,
    pod_has_socket,
)
from kubevirt_testing.launcher_socket import launcher_socket, sockets_dir

POD_UID = "pod-1"


def test_a_bound_socket_is_found_and_marked(tmp_path: Path) -> None:
    with launcher_socket(tmp_path, POD_UID):
        assert pod_dir_exists(tmp_path, POD_UID)
        assert pod_has_socket(tmp_path, POD_UID)
        assert not is_marked_unresponsive(tmp_path, POD_UID)
        mark_unresponsive(tmp_path, POD_UID)
        assert is_marked_unresponsive(tmp_path, POD_UID)


def test_a_missing_pod_has_nothing(tmp_path: Path) -> None:
    assert not pod_dir_exists(tmp_path, POD_UID)
    assert not pod_has_socket(tmp_path, POD_UID)
    assert is_marked_unresponsive(tmp_path, POD_UID)


def test_a_plain_file_is_not_a_socket(tmp_path: Path) -> None:
    directory = sockets_dir(tmp_path, POD_UID)
    directory.mkdir(parents=True)
    (directory / "launcher-sock").write_bytes(b"")
    assert not pod_has_socket(tmp_path, POD_UID)


def test_links_are_not_followed(tmp_path: Path) -> None:
    pods, elsewhere = tmp_path / "pods", tmp_path / "elsewhere"
    pods.mkdir()
    with launcher_socket(elsewhere, POD_UID):
        (pods / POD_UID).symlink_to(elsewhere / POD_UID)  # the pod directory itself
        assert not pod_dir_exists(pods, POD_UID)
        assert not pod_has_socket(pods, POD_UID)
        assert is_marked_unresponsive(pods, POD_UID)

        linked = "pod-2"  # a real pod directory whose socket is a link to another pod's
        sockets_dir(pods, linked).mkdir(parents=True)
        (sockets_dir(pods, linked) / "launcher-sock").symlink_to(
            sockets_dir(elsewhere, POD_UID) / "launcher-sock"
        )
        assert pod_dir_exists(pods, linked)
        assert not pod_has_socket(pods, linked)


def test_a_pod_uid_with_a_separator_is_no_pod(tmp_path: Path) -> None:
    assert not pod_dir_exists(tmp_path, "../x")
    assert is_marked_unresponsive(tmp_path, "a/b")
