"""The proxy's first checks (CDI's ``handleUploadRequest``): a bearer token in ``Authorization``, signed by
cdi-apiserver, granting an upload to a named claim."""

from __future__ import annotations

import re

from cryptography.hazmat.primitives.asymmetric import rsa

from kubevirt.cdi import token
from kubevirt.log import get_logger
from kubevirt_api.cdi.constants import Upload

# CDI's pattern: "Bearer", any case, then the token's base64url/JWT characters and nothing else. Go's \s is
# these five bytes, and its $ is the end of the text (Python's would also take a final newline).
_BEARER = re.compile(r"(?i)Bearer[\t\n\f\r ]+([A-Za-z0-9\-._~+/]+)")
_CLAIMS = "persistentvolumeclaims"


class RejectedError(Exception):
    """The request may not upload; ``status`` is the answer (400 malformed, 401 not authentic)."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status


def bearer_token(header: str) -> str | None:
    match = _BEARER.fullmatch(header)
    return match.group(1) if match else None


def authorize(header: str | None, public_key: rsa.RSAPublicKey) -> token.Payload:
    """The upload the ``Authorization`` header grants; raises :class:`RejectedError` otherwise."""
    if not header:
        raise RejectedError(400, "no Authorization header")
    raw = bearer_token(header)
    if raw is None:
        raise RejectedError(400, "Authorization is not a bearer token")
    try:
        payload = token.validate(raw, public_key)
    except token.TokenError as err:
        raise RejectedError(401, str(err)) from None
    if (
        payload.operation != Upload.TOKEN_OPERATION
        or not payload.name
        or not payload.namespace
        or payload.resource.get("resource") != _CLAIMS
    ):
        get_logger().error(
            "Bad token",
            operation=payload.operation,
            name=payload.name,
            namespace=payload.namespace,
            resource=payload.resource.get("resource", ""),
        )
        raise RejectedError(400, "the token grants no upload to a claim")
    return payload
