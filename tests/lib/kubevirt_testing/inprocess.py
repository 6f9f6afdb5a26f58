"""Components run inside the test process (threads, not pods), and HTTPS JSON calls to them."""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import json
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kubevirt.virt_api import app as virt_api
from kubevirt_testing.certificates import self_signed, write_pair

JSON = dict[str, Any]


def write_certificate(directory: Path, common_name: str = "in-process") -> tuple[Path, Path]:
    """A self-signed serving certificate and key written to ``directory``: (cert file, key file)."""
    return write_pair(self_signed(common_name), directory)


def https_json(port: int, method: str, path: str, body: JSON | None = None) -> tuple[int, JSON]:
    """One HTTPS request to 127.0.0.1 (the certificate is not checked): status and decoded JSON body."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    conn = http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=10)
    try:
        payload = json.dumps(body).encode() if body is not None else None
        headers = {"Content-Type": "application/json"} if payload is not None else {}
        conn.request(method, path, body=payload, headers=headers)
        reply = conn.getresponse()
        return reply.status, json.loads(reply.read())
    finally:
        conn.close()


@contextlib.contextmanager
def virt_api_running(options: virt_api.Options) -> Iterator[None]:
    """virt-api's server on its own event loop thread until the block ends."""
    loop = asyncio.new_event_loop()
    stop = asyncio.Event()
    runner = threading.Thread(
        target=lambda: loop.run_until_complete(virt_api.serve(options, stop)), daemon=True
    )
    runner.start()
    try:
        yield
    finally:
        loop.call_soon_threadsafe(stop.set)
        runner.join(15)
        loop.close()
