"""The authorising middleware: a path that reads two ways is refused first (400, or 404 for a namespace
no object can live in), then an authorizer's refusal is 401 with the reason as plain text, and a review
that could not be made a 500 with no body.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Collection, Mapping
from typing import Any

from aiohttp import web

from kubevirt.log import get_logger
from kubevirt.service.aggregation import paths
from kubevirt.service.aggregation.authorizer import RequestAuthorizer
from kubevirt.service.aggregation.front_proxy import FrontProxyTrust
from kubevirt.service.aggregation.status import StatusError, status_response

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
# The answer to an encoded path and what the router matched in it, when it must go no further.
PathRefusal = Callable[[str, Mapping[str, str]], StatusError | None]


def authorizing_middleware(
    authorizer: RequestAuthorizer,
    trust: Callable[[], FrontProxyTrust | None],
    exempt: Collection[str],
    peer: Callable[[web.Request], str | None] | None = None,
    refusal: PathRefusal = paths.path_refusal,
) -> Any:
    """Refuses what the authorizer refuses; ``exempt`` paths (the webhooks) pass untouched. ``peer`` reads
    the client certificate's common name (the TLS connection's by default); ``refusal`` says which paths
    go no further (the server's own path rules)."""
    log = get_logger()
    common_name = peer or peer_common_name

    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.path in exempt:
            return await handler(request)
        # The authorizer reads the encoded path the way the router did; a path it could read otherwise
        # goes no further.
        raw_path = request.rel_url.raw_path
        refused = refusal(raw_path, request.match_info)
        if refused is not None:
            log.info("refusing an ambiguous or impossible path", path=raw_path[:256], code=refused.code)
            return status_response(refused)
        current = trust()
        certificate = common_name(request)
        authenticated = (
            certificate is not None and current is not None and current.allows(certificate or None)
        )
        if current is not None:
            authorizer.names = current.headers
        headers = list(request.headers.items())
        try:
            decision = await asyncio.to_thread(
                authorizer.decide, raw_path, request.method, authenticated, headers
            )
        except Exception as err:  # the review itself failed: KubeVirt answers 500 with no body
            log.error("internal error during auth request", reason=str(err))
            return web.Response(status=500)
        if not decision.allowed:
            return web.Response(status=401, text=decision.reason)
        return await handler(request)

    return middleware


def peer_common_name(request: web.Request) -> str | None:
    """The verified client certificate's common name ('' if it has none); None without a certificate."""
    transport = request.transport
    peer = transport.get_extra_info("peercert") if transport is not None else None
    if not peer:
        return None
    for rdn in peer.get("subject", ()):
        for key, value in rdn:
            if key == "commonName":
                return str(value)
    return ""
