"""Sending the source to the target's upload server: one HTTPS POST, the client certificate the
controller made for this clone, the body in snappy's framing format (what Go's snappy BufferedWriter
writes in CDI's cloner) streamed with chunked transfer encoding as it is read and compressed."""

from __future__ import annotations

import http.client
import os
import ssl
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Final
from urllib.parse import urlsplit

import cramjam

from kubevirt.cdi_cloner.config import ClonerConfig
from kubevirt.cdi_cloner.progress import Readable
from kubevirt.cdi_cloner.source import SourceError
from kubevirt.log import get_logger
from kubevirt.service.tls import client_context

CONTENT_TYPE_HEADER: Final = "x-cdi-content-type"  # CDI's UploadContentTypeHeader
READ_SIZE: Final = 1 << 20  # source bytes compressed at a time; snappy frames them in 64 KiB chunks
CONNECT_TIMEOUT: Final = 30.0  # Go's default dialer; the transfer itself has no deadline, as in CDI


class UploadError(Exception):
    """The upload did not succeed; the message is CDI's."""


def tls_context(config: ClonerConfig) -> ssl.SSLContext:
    """Trusting the upload server's CA alone, presenting the clone's client certificate and checking the
    server's name against the URL's host, as Go's client does. Raises UploadError."""
    # The key pair comes as PEM text and OpenSSL loads key pairs from files only: a private folder,
    # gone once they are loaded.
    with tempfile.TemporaryDirectory(prefix="cdi-cloner-") as folder:
        cert, key = Path(folder) / "tls.crt", Path(folder) / "tls.key"
        _write_private(cert, config.client_cert_pem)
        _write_private(key, config.client_key_pem)
        try:
            context = client_context(config.server_ca_pem, cert=(cert, key))
        except (ssl.SSLError, ValueError, OSError) as err:
            raise UploadError(f"Error {err} creating client keypair") from err
    context.check_hostname = True
    return context


def _write_private(path: Path, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(text)


def compressed(stream: Readable) -> Iterator[bytes]:
    """``stream`` in snappy's framing format, a piece at a time."""
    compressor = cramjam.snappy.Compressor()
    total = 0
    while data := _read(stream):
        total += len(data)
        compressor.compress(data)
        out = bytes(compressor.flush())
        if out:
            yield out
    tail = bytes(compressor.finish())  # nothing at all for an empty source, as from Go's writer
    if tail:
        yield tail
    get_logger().info("Wrote bytes", count=total)


def _read(stream: Readable) -> bytes:
    try:
        return stream.read(READ_SIZE)
    except OSError as err:  # not to be taken for the connection's failure
        raise SourceError(f"Error reading the source: {err}") from err


def send(config: ClonerConfig, stream: Readable, context: ssl.SSLContext | None = None) -> bytes:
    """POST ``stream`` to the upload URL; the response's body. Raises UploadError for a failure to
    connect or send, or an answer other than 2xx; the source's own errors pass through."""
    url = urlsplit(config.upload_url)
    if url.scheme != "https" or not url.hostname:
        raise UploadError(
            f"Error unsupported upload URL {config.upload_url!r} POSTing to {config.upload_url}"
        )
    context = context or tls_context(config)
    path = url.path or "/"
    if url.query:
        path += "?" + url.query
    conn = http.client.HTTPSConnection(url.hostname, url.port, context=context, timeout=CONNECT_TIMEOUT)
    try:
        try:
            conn.connect()
            if conn.sock is not None:
                conn.sock.settimeout(None)  # an upload server answers once the whole image is written
        except (OSError, ssl.SSLError) as err:
            raise UploadError(f"Error {err} POSTing to {config.upload_url}") from err
        get_logger().info("Set header", content_type=config.content_type)
        return _post(conn, path, config, stream)
    finally:
        conn.close()


def _post(conn: http.client.HTTPSConnection, path: str, config: ClonerConfig, stream: Readable) -> bytes:
    headers = {CONTENT_TYPE_HEADER: config.content_type}
    send_error: OSError | None = None
    try:
        conn.request("POST", path, body=compressed(stream), headers=headers, encode_chunked=True)
    except (OSError, http.client.HTTPException) as err:
        # The server may have answered and closed before taking the whole body (a refused client):
        # its answer says more than the broken pipe.
        send_error = err if isinstance(err, OSError) else OSError(str(err))
    try:
        response = conn.getresponse()
        body = response.read()
    except (OSError, http.client.HTTPException) as err:
        cause = send_error or err
        raise UploadError(f"Error {cause} POSTing to {config.upload_url}") from cause
    if not 200 <= response.status < 300:
        get_logger().error(
            "upload refused", status=response.status, body=body[:1024].decode(errors="replace")
        )
        raise UploadError(f"Unexpected status code {response.status}")
    if send_error is not None:
        raise UploadError(f"Error {send_error} POSTing to {config.upload_url}") from send_error
    return body
