"""The snappy framed body and the client's TLS settings."""

from __future__ import annotations

import io
import os
from pathlib import Path

import cramjam
import pytest

from kubevirt.cdi_cloner.config import FILESYSTEM_CLONE, ClonerConfig
from kubevirt.cdi_cloner.source import SourceError
from kubevirt.cdi_cloner.upload import UploadError, compressed, send, tls_context

MIB = 1 << 20


def test_body_is_snappy_framed_and_streamed_in_pieces() -> None:
    data = os.urandom(MIB) + bytes(3 * MIB) + b"tail"
    pieces = list(compressed(io.BytesIO(data)))
    assert len(pieces) >= 4  # one per source read: nothing waits for the whole volume
    body = b"".join(pieces)
    assert body.startswith(b"\xff\x06\x00\x00sNaPpY")  # the framing format's stream identifier
    assert bytes(cramjam.snappy.decompress(body)) == data
    assert len(body) < 2 * MIB


def test_an_empty_source_is_an_empty_body() -> None:
    assert b"".join(compressed(io.BytesIO(b""))) == b""


def test_a_source_read_error_is_the_sources() -> None:
    class Broken:
        def read(self, size: int = -1, /) -> bytes:
            raise OSError(5, "Input/output error")

    with pytest.raises(SourceError, match="Input/output error"):
        list(compressed(Broken()))


def _config(upload_url: str = "https://cdi-upload-tgt.ns.svc/v1beta1/upload") -> ClonerConfig:
    return ClonerConfig(
        content_type=FILESYSTEM_CLONE,
        mount_point=Path("/nowhere"),
        owner_uid="uid",
        client_key_pem="not a key",
        client_cert_pem="not a certificate",
        server_ca_pem="not a CA",
        upload_url=upload_url,
        preallocation=False,
    )


def test_a_bad_key_pair_is_a_clear_error() -> None:
    with pytest.raises(UploadError, match="creating client keypair"):
        tls_context(_config())


def test_only_https_urls_are_taken() -> None:
    with pytest.raises(UploadError, match="unsupported upload URL"):
        send(_config(upload_url="http://cdi-upload-tgt.ns.svc/v1beta1/upload"), io.BytesIO(b""))
