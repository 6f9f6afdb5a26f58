"""Plain-JSON REST access to the Kubernetes API, shared by all threads of a component.

Every write is guarded: updates carry the object's ``metadata.resourceVersion``, deletes may carry a uid
precondition, and a stale write fails with :class:`~kubevirt.client.errors.ConflictError` at once. Nothing
here retries a conflict (the work queue does, with backoff, against a fresher cache); only failures to
reach the server are retried here, briefly and with backoff, and only where repeating the request cannot
do anything twice (a failed connection, or a read).
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlencode

import urllib3
from tenacity import RetryCallState, retry, retry_if_exception, stop_after_attempt, wait_exponential
from urllib3.exceptions import (
    ConnectTimeoutError,
    HTTPError,
    NewConnectionError,
    ProtocolError,
    ReadTimeoutError,
)

from kubevirt.client import gojson
from kubevirt.client.connection import Connection, connect
from kubevirt.client.errors import ConnectionFailedError, error_from_response
from kubevirt.client.metrics import count_request, observe_request_latency
from kubevirt.client.protocols import JSON, KubeApi
from kubevirt.client.resources import Resource
from kubevirt.client.watch import WatchStream
from kubevirt.log import get_logger

__all__ = ["PATCH_CONTENT_TYPES", "KubeClient"]

PATCH_CONTENT_TYPES = {
    "json": "application/json-patch+json",
    "merge": "application/merge-patch+json",
    "strategic": "application/strategic-merge-patch+json",
}
REQUEST_TIMEOUT = 30.0
CONNECT_TIMEOUT = 5.0
_READ_METHODS = frozenset({"GET"})
_log = get_logger()
# Spelled before the class: inside it `list` is the method.
_Items = list[JSON]
_Patch = list[Any] | dict[str, Any]


class _TransientError(Exception):
    """A failure worth repeating the request for; carries the underlying error."""

    def __init__(self, error: HTTPError) -> None:
        self.error = error
        super().__init__(str(error))


def _log_retry(state: RetryCallState) -> None:
    error = state.outcome.exception() if state.outcome is not None else None
    _log.warning("retrying an API request", attempt=state.attempt_number, reason=str(error))


class KubeClient:
    """Thread-safe: one pooled connection manager, no per-request state."""

    def __init__(self, connection: Connection, *, user_agent: str = "kubevirt-py") -> None:
        self._connection = connection
        self._host = connection.host
        self._user_agent = user_agent

    @classmethod
    def from_kubeconfig(
        cls, path: str | None, *, user_agent: str = "kubevirt-py", context: str | None = None
    ) -> KubeClient:
        """From a kubeconfig file; with None, the pod's service account (or ``$KUBECONFIG`` outside a pod).
        ``context`` picks a kubeconfig context other than the current one."""
        return cls(connect(path, context=context), user_agent=user_agent)

    @property
    def connection(self) -> Connection:
        """Where the API server is and how to reach it (for streams that bypass the pool)."""
        return self._connection

    # Reads.

    def get(self, resource: Resource, namespace: str | None, name: str) -> JSON:
        return self._json("GET", resource.path(namespace, name))

    def get_raw(self, resource: Resource, namespace: str | None, name: str) -> bytes:
        return self.request("GET", resource.path(namespace, name))

    def list(
        self,
        resource: Resource,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> tuple[_Items, str]:
        body = json.loads(
            self.list_raw(resource, namespace, label_selector=label_selector, field_selector=field_selector)
        )
        items: list[JSON] = body.get("items") or []
        for item in items:  # list items of built-in kinds come without their type
            item.setdefault("apiVersion", resource.api_version)
            item.setdefault("kind", resource.kind)
        return items, str((body.get("metadata") or {}).get("resourceVersion") or "")

    def list_raw(
        self,
        resource: Resource,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        resource_version: str | None = None,
        limit: int | None = None,
        continue_token: str | None = None,
    ) -> bytes:
        """The list response's raw JSON (``{"metadata": {"resourceVersion": ...}, "items": [...]}``)."""
        query = _query(
            labelSelector=label_selector,
            fieldSelector=field_selector,
            resourceVersion=resource_version,
            limit=limit,
            **{"continue": continue_token},
        )
        return self.request("GET", resource.path(namespace), query=query, timeout=60.0)

    def watch(
        self,
        resource: Resource,
        namespace: str | None = None,
        *,
        resource_version: str,
        label_selector: str | None = None,
        field_selector: str | None = None,
        timeout_seconds: int = 300,
        allow_bookmarks: bool = True,
    ) -> WatchStream:
        """A watch from ``resource_version``; the server ends it after ``timeout_seconds``."""
        query = _query(
            watch="true",
            resourceVersion=resource_version,
            labelSelector=label_selector,
            fieldSelector=field_selector,
            timeoutSeconds=timeout_seconds,
            allowWatchBookmarks="true" if allow_bookmarks else None,
        )
        response = self._send(
            "GET", resource.path(namespace), query=query, timeout=timeout_seconds + 30.0, stream=True
        )
        return WatchStream(response)

    # Writes.

    def create(
        self, resource: Resource, namespace: str | None, body: Mapping[str, Any], *, dry_run: bool = False
    ) -> JSON:
        return self._json("POST", resource.path(namespace), body=body, query=_dry_run(dry_run))

    def update(self, resource: Resource, namespace: str | None, body: Mapping[str, Any]) -> JSON:
        return self._json("PUT", resource.path(namespace, _name(body)), body=body)

    def update_status(self, resource: Resource, namespace: str | None, body: Mapping[str, Any]) -> JSON:
        return self._json("PUT", resource.path(namespace, _name(body), "status"), body=body)

    def patch(
        self,
        resource: Resource,
        namespace: str | None,
        name: str,
        patch: _Patch,
        *,
        patch_type: str = "json",
        subresource: str | None = None,
        dry_run: bool = False,
    ) -> JSON:
        content_type = PATCH_CONTENT_TYPES.get(patch_type)
        if content_type is None:
            known = ", ".join(PATCH_CONTENT_TYPES)
            raise ValueError(f"patch_type: must be one of {known}, not {patch_type!r}")
        return self._json(
            "PATCH",
            resource.path(namespace, name, subresource),
            body=patch,
            content_type=content_type,
            query=_dry_run(dry_run),
        )

    def delete(
        self,
        resource: Resource,
        namespace: str | None,
        name: str,
        *,
        uid: str | None = None,
        grace_period_seconds: int | None = None,
        propagation_policy: str | None = None,
    ) -> None:
        options: JSON = {"kind": "DeleteOptions", "apiVersion": "v1"}
        if uid is not None:
            options["preconditions"] = {"uid": uid}
        if grace_period_seconds is not None:
            options["gracePeriodSeconds"] = grace_period_seconds
        if propagation_policy is not None:
            options["propagationPolicy"] = propagation_policy
        self.request("DELETE", resource.path(namespace, name), body=options)

    # The wire.

    def server_version(self) -> JSON:
        """The API server's ``/version`` answer; failures raise ApiError subclasses."""
        version: JSON = json.loads(self.request("GET", "/version"))
        return version

    def request(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, str] | None = None,
        body: Any = None,
        content_type: str = "application/json",
        timeout: float = REQUEST_TIMEOUT,
        retry: bool = True,
    ) -> bytes:
        """Sends one request and returns the response body; failures raise ApiError subclasses.

        ``retry=False`` sends it once, for a caller that must answer within a deadline of its own (an
        admission review) and would rather fail with the reason than wait."""
        return self._send(
            method, path, query=query, body=body, content_type=content_type, timeout=timeout, retry=retry
        ).data

    def _json(self, method: str, path: str, **kwargs: Any) -> JSON:
        decoded: JSON = json.loads(self.request(method, path, **kwargs))
        return decoded

    def _send(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, str] | None = None,
        body: Any = None,
        content_type: str = "application/json",
        timeout: float = REQUEST_TIMEOUT,
        stream: bool = False,
        retry: bool = True,
    ) -> urllib3.BaseHTTPResponse:
        url = self._host + path + (f"?{urlencode(query)}" if query else "")
        headers = {"Accept": "application/json", "User-Agent": self._user_agent}
        headers.update(self._connection.auth_headers())
        payload = None
        if body is not None:
            payload = gojson.dumps(body)
            headers["Content-Type"] = content_type
        started = time.monotonic()
        try:
            send = self._send_with_retries if retry else self._send_once
            response = send(method, url, payload, headers, timeout, stream)
            if not 200 <= response.status < 300:
                data = response.data if not stream else response.read()
                response.release_conn()
                raise error_from_response(response.status, data)
            return response
        except _TransientError as transient:
            raise ConnectionFailedError(f"{method} {path}: {transient.error}") from None
        finally:
            if not stream:  # as client-go, which times whole calls (every try) but not watches
                observe_request_latency(method, self._host, path, query or (), time.monotonic() - started)

    def _send_once(
        self,
        method: str,
        url: str,
        payload: bytes | None,
        headers: dict[str, str],
        timeout: float,
        stream: bool,
    ) -> urllib3.BaseHTTPResponse:
        try:
            return self._round_trip(
                method,
                url,
                body=payload,
                headers=headers,
                preload_content=not stream,
                timeout=urllib3.Timeout(connect=CONNECT_TIMEOUT, read=timeout),
                retries=False,
            )
        except (NewConnectionError, ConnectTimeoutError) as err:
            raise _TransientError(err) from None  # nothing reached the server: safe for every verb
        except (ProtocolError, ReadTimeoutError) as err:
            if method in _READ_METHODS and not stream:
                raise _TransientError(err) from None
            raise ConnectionFailedError(f"{method} {url}: {err}") from None

    def _round_trip(self, method: str, url: str, **kwargs: Any) -> urllib3.BaseHTTPResponse:
        """One HTTP exchange, counted as KubeVirt counts its client's: every try, no answer as ``<error>``."""
        try:
            response = self._connection.pool.request(method, url, **kwargs)
        except Exception:
            count_request(method, url, None)
            raise
        count_request(method, url, response.status)
        return response

    # What _send_once marks transient is sent again, briefly and with backoff.
    _send_with_retries = retry(
        retry=retry_if_exception(lambda error: isinstance(error, _TransientError)),
        stop=stop_after_attempt(5),
        wait=wait_exponential(multiplier=0.1, max=2.0),
        before_sleep=_log_retry,
        reraise=True,
    )(_send_once)


def _query(**params: Any) -> dict[str, str]:
    return {key: str(value) for key, value in params.items() if value is not None and value != ""}


def _dry_run(dry_run: bool) -> dict[str, str] | None:
    """The query of a write the server checks and answers but does not persist."""
    return {"dryRun": "All"} if dry_run else None


def _name(body: Mapping[str, Any]) -> str:
    name = (body.get("metadata") or {}).get("name")
    if not isinstance(name, str) or not name:
        raise ValueError("metadata.name: required to update an object")
    return name


def _is_a_kube_api(client: KubeClient) -> KubeApi:
    return client  # mypy checks here that KubeClient keeps to the KubeApi Protocol
