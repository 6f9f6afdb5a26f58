"""Serving an aiohttp application over TLS until SIGTERM or SIGINT, as the proxies and API servers do: the
listener with its reloading certificate, the stop event the signals set, and the process exit code."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from aiohttp import web

from kubevirt.log import get_logger

if TYPE_CHECKING:  # only named here: the export server's process need not load the TLS machinery
    from kubevirt.service.tls import ReloadingCertificate

# Exit codes: 0 stopped by a signal, 1 failed while running, 2 cannot start.
EXIT_FAILED = 1
EXIT_CANNOT_START = 2


class Listening:
    """A serving application: its port, and how to stop it (the listener, then the certificate's watch)."""

    def __init__(self, runner: web.AppRunner, certificate: ReloadingCertificate) -> None:
        self._runner = runner
        self._certificate = certificate

    @property
    def port(self) -> int:
        return int(self._runner.addresses[0][1])

    async def close(self) -> None:
        await self._certificate.stop()
        await self._runner.cleanup()


async def listen(
    application: web.Application, certificate: ReloadingCertificate, host: str, port: int
) -> Listening:
    """Serves ``application`` over TLS on ``host:port`` (0 picks a free port) until
    :meth:`Listening.close`; the certificate follows its files meanwhile."""
    runner = web.AppRunner(application, access_log=None, handle_signals=False)
    await runner.setup()
    site = web.TCPSite(runner, host, port, ssl_context=certificate.server_context, reuse_address=True)
    try:
        await site.start()
    except BaseException:
        await runner.cleanup()
        raise
    certificate.start()
    return Listening(runner, certificate)


async def hold_until(stop: asyncio.Event, listening: Listening) -> None:
    """Keeps ``listening`` up until ``stop`` is set, then closes it (also when cancelled)."""
    try:
        await stop.wait()
    finally:
        await listening.close()


def stop_on_signals() -> asyncio.Event:
    """An event SIGTERM and SIGINT set; call it from inside the running loop."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    return stop


async def until_signalled(serve: Callable[[asyncio.Event], Awaitable[None]]) -> None:
    """Runs ``serve`` with the stop event of :func:`stop_on_signals` (in place before it starts)."""
    await serve(stop_on_signals())


def run_until_signalled(component: str, serve: Callable[[asyncio.Event], Awaitable[None]]) -> int:
    """Runs ``serve`` in a new event loop until a signal stops it; the process exit code (a listener
    that cannot be opened is logged and exits :data:`EXIT_FAILED`)."""
    try:
        asyncio.run(until_signalled(serve))
    except OSError as err:
        get_logger().error(f"{component} cannot serve", reason=str(err))
        return EXIT_FAILED
    return 0
