"""``/metrics`` for the aiohttp servers: Prometheus' text format of a registry, rendered off the event loop
(a scrape-time collector may take a while, and the server's other requests must not wait on it)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from aiohttp import hdrs, web
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, CollectorRegistry, generate_latest

__all__ = ["metrics_handler"]


def metrics_handler(
    registry: CollectorRegistry = REGISTRY,
) -> Callable[[web.Request], Awaitable[web.Response]]:
    async def metrics(_request: web.Request) -> web.Response:
        body = await asyncio.to_thread(generate_latest, registry)
        return web.Response(body=body, headers={hdrs.CONTENT_TYPE: CONTENT_TYPE_LATEST})

    return metrics
