"""How cdi-apiserver serves an admission webhook, as CDI's handler does (``pkg/apiserver/webhooks``).

The API server POSTs an AdmissionReview as ``application/json``; the answer is an AdmissionReview of the
same apiVersion carrying the request's uid. A body of another content type gets an empty answer (CDI only
logs it); one that is not an AdmissionReview gets a review whose response is a 400, and an admitter that
fails one with 500. The admitter runs in a worker thread: it waits on the API server.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Sequence

from aiohttp import web

from kubevirt.admission.causes import StatusCause
from kubevirt.admission.response import (
    HTTP_BAD_REQUEST,
    HTTP_INTERNAL_ERROR,
    HTTP_UNPROCESSABLE,
    AdmissionResponse,
)
from kubevirt.admission.review import (
    SUPPORTED_API_VERSIONS,
    AdmissionRequest,
    ReviewDecodeError,
    decode_review,
)
from kubevirt.log import get_logger

Admit = Callable[[AdmissionRequest], AdmissionResponse]
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
CONTENT_TYPE = "application/json"
DEFAULT_API_VERSION = SUPPORTED_API_VERSIONS[0]


def error(message: str, code: int = HTTP_BAD_REQUEST) -> AdmissionResponse:
    """CDI's answer to anything that is not a decision: 400 with the error's text."""
    return AdmissionResponse(allowed=False, status={"metadata": {}, "message": message, "code": code})


def rejected(causes: Sequence[StatusCause]) -> AdmissionResponse:
    """CDI's refusal: 422, the causes, and their messages each after a space."""
    message = "".join(f" {cause.message}" for cause in causes)
    status = {
        "metadata": {},
        "message": message,
        "details": {"causes": [cause.to_status() for cause in causes]},
        "code": HTTP_UNPROCESSABLE,
    }
    return AdmissionResponse(allowed=False, status=status, causes=tuple(causes))


def answer(body: bytes, admit: Admit) -> bytes:
    """The AdmissionReview answering ``body``."""
    try:
        review = decode_review(body)
    except ReviewDecodeError as err:
        get_logger().error("bad AdmissionReview", reason=str(err))
        document = _review(DEFAULT_API_VERSION, error(str(err)).to_dict(""))
    else:
        try:
            response = admit(review.request)
        except Exception as err:  # an admitter's bug must not take the connection down with it
            get_logger().exception("admitting failed", uid=review.request.uid)
            response = error(str(err), HTTP_INTERNAL_ERROR)
        document = _review(review.api_version, response.to_dict(review.request.uid))
    return json.dumps(document, separators=(",", ":")).encode()


def _review(api_version: str, response: dict[str, object]) -> dict[str, object]:
    return {"kind": "AdmissionReview", "apiVersion": api_version, "response": response}


def admission_handler(admit: Admit) -> Handler:
    """An aiohttp handler answering AdmissionReviews with ``admit``."""

    async def handle(request: web.Request) -> web.StreamResponse:
        body = await request.read()
        content_type = request.headers.get("Content-Type", "")
        if content_type != CONTENT_TYPE:
            get_logger().error(f"contentType={content_type}, expect {CONTENT_TYPE}", path=request.path)
            return web.Response()
        document = await asyncio.to_thread(answer, body, admit)
        return web.Response(body=document, content_type=CONTENT_TYPE)

    return handle
