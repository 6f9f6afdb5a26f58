"""The clone progress counter CDI's controller scrapes."""

from __future__ import annotations

import io
import socket
import ssl
import urllib.request

from prometheus_client import generate_latest

from kubevirt.cdi_cloner.progress import CountingReader, Progress, serve


def test_progress_follows_the_bytes_read_and_ends_at_100() -> None:
    progress = Progress("owner-1")
    reader = CountingReader(io.BytesIO(b"x" * 1000), 2000, progress)
    reader.read(500)
    assert progress.value == 25.0
    reader.read(500)
    assert progress.value == 50.0
    assert reader.read(500) == b""  # the source ended short of its estimate: it is done all the same
    assert progress.value == 100.0
    text = generate_latest(progress.registry).decode()
    assert 'kubevirt_cdi_clone_progress_total{ownerUID="owner-1"} 100.0' in text


def test_progress_never_passes_100_nor_goes_back() -> None:
    progress = Progress("owner-1")
    reader = CountingReader(io.BytesIO(b"x" * 3000), 1000, progress)
    reader.read(2000)
    assert progress.value == 100.0
    progress.advance(10.0)
    assert progress.value == 100.0


def test_unknown_total_leaves_the_progress_alone() -> None:
    progress = Progress("owner-1")
    reader = CountingReader(io.BytesIO(b"x" * 10), 0, progress)
    reader.read()
    reader.read()
    assert progress.value == 0.0


def test_progress_is_served_over_https() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    progress = Progress("owner-2")
    progress.advance(42.5)
    serve(progress, port, address="127.0.0.1")
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE  # self-signed, as CDI's: the controller does not verify it
    with urllib.request.urlopen(f"https://127.0.0.1:{port}/metrics", context=context, timeout=30) as reply:
        text = reply.read().decode()
    assert 'kubevirt_cdi_clone_progress_total{ownerUID="owner-2"} 42.5' in text
