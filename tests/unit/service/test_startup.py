"""A component's start-up checks: missing certificate files and an unusable kubeconfig end in a log line."""

from __future__ import annotations

from pathlib import Path

import structlog.testing

from kubevirt.service.startup import cluster_client, tls_files_present


def test_tls_files_present_only_when_every_file_exists(tmp_path: Path) -> None:
    cert, key = tmp_path / "tls.crt", tmp_path / "tls.key"
    cert.write_text("cert")
    assert not tls_files_present(cert, key)
    key.write_text("key")
    assert tls_files_present(cert, key)
    assert not tls_files_present(cert, tmp_path)  # a directory is no certificate file


def test_an_unusable_kubeconfig_gives_no_client(tmp_path: Path) -> None:
    broken = tmp_path / "kubeconfig"
    broken.write_text("not: [a kubeconfig")
    with structlog.testing.capture_logs() as logged:
        assert cluster_client(str(broken), "virt-exportproxy") is None
    assert [entry["event"] for entry in logged] == ["virt-exportproxy cannot reach the cluster"]
    assert str(broken) in logged[0]["reason"]
