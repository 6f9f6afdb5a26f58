"""Refusals as Kubernetes ``metav1.Status`` errors, worded as apimachinery's constructors word them."""

from __future__ import annotations

from typing import Any

from aiohttp import web


class StatusError(Exception):
    """A request refused with an HTTP code and a ``Status`` body."""

    def __init__(self, code: int, reason: str, message: str, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details

    def body(self) -> dict[str, Any]:
        document: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
        }
        if self.details is not None:
            document["details"] = self.details
        document["code"] = self.code
        return document


def bad_request(why: str) -> StatusError:
    return StatusError(400, "BadRequest", why)


def status_response(err: StatusError) -> web.Response:
    return web.json_response(err.body(), status=err.code)
