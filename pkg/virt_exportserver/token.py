"""The export token, checked on every data request as KubeVirt checks it.

The token comes in the ``x-kubevirt-export-token`` query parameter or header (the first value of
each); either matching the token file's content, read afresh for every request, lets the request
through; otherwise 401 with no body, and 500 when the file cannot be read. The parameter is taken out
of the query before the handler sees it, so a redirect never repeats it.

Unlike KubeVirt, an empty token file lets nothing through: there a request without any token matches
an empty file.
"""

from __future__ import annotations

import hmac
from pathlib import Path

from aiohttp import web

from kubevirt.export.token import TOKEN_HEADER
from kubevirt.log import get_logger
from kubevirt.virt_exportserver.httpcompat import Target, encode_query, parse_query, status_only
from kubevirt.virt_exportserver.mux import Handler

# The controller's token is a short random string; anything bigger is not a token file.
_MAX_TOKEN_BYTES = 64 * 1024


class TokenFile:
    def __init__(self, path: Path) -> None:
        self._path = path

    def read(self) -> bytes:
        with self._path.open("rb") as token_file:
            token = token_file.read(_MAX_TOKEN_BYTES + 1)
        if len(token) > _MAX_TOKEN_BYTES:
            raise OSError(f"{self._path}: larger than {_MAX_TOKEN_BYTES} bytes")
        return token

    def guard(self, handler: Handler) -> Handler:
        """``handler`` behind the token check."""

        async def checked(request: web.Request, target: Target) -> web.StreamResponse:
            try:
                token = self.read()
            except OSError as err:
                get_logger().error("cannot read the export token", path=str(self._path), reason=str(err))
                return status_only(500)
            query_token, target = _take_query_token(target)
            header_token = request.headers.get(TOKEN_HEADER, "")
            if token and any(_same(candidate, token) for candidate in (query_token, header_token)):
                return await handler(request, target)
            return status_only(401)

        return checked


def _take_query_token(target: Target) -> tuple[str, Target]:
    pairs = parse_query(target.raw_query)
    values = [value for key, value in pairs if key == TOKEN_HEADER]
    if not values:
        return "", target
    rest = [(key, value) for key, value in pairs if key != TOKEN_HEADER]
    return values[0], target.with_query(encode_query(rest))


def _same(candidate: str, token: bytes) -> bool:
    return hmac.compare_digest(candidate.encode("utf-8", "surrogateescape"), token)
