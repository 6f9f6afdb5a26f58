"""An aiohttp application served on loopback from a thread of its own, for synchronous clients (a CLI
under test, ``http.client``), over TLS when given a context."""

from __future__ import annotations

import asyncio
import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from aiohttp import web


@contextmanager
def serving(app: web.Application, ssl_context: ssl.SSLContext | None = None) -> Iterator[int]:
    """Serves ``app`` on a free loopback port until the block ends; yields the port."""
    loop = asyncio.new_event_loop()
    runner = web.AppRunner(app, access_log=None, handle_signals=False)
    loop.run_until_complete(runner.setup())
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=ssl_context)
    loop.run_until_complete(site.start())
    port = int(runner.addresses[0][1])
    thread = threading.Thread(target=loop.run_forever, name="app-thread", daemon=True)
    thread.start()
    try:
        yield port
    finally:
        asyncio.run_coroutine_threadsafe(runner.cleanup(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()
