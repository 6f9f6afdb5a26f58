"""virt-handler's Notify server (``kubevirt.notify.v1.Notify``) on its node socket.

Launchers reach it through the pipe socket virt-handler puts in each launcher pod. A domain event
updates the domain cache and enqueues its VMI at once, so the VMI's status follows the domain without
waiting for a resync; a Kubernetes event from a launcher is recorded on its VMI, once the VMI the
event names is known here with the same UID. Malformed requests are answered with ``success=false``
and the field at fault, never an exception out of the server.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc

from kubevirt.client import EventSink
from kubevirt.controller import Store
from kubevirt.handler_launcher_com.notify.v1 import notify_pb2, notify_pb2_grpc
from kubevirt.handler_launcher_com.server import register_notify_info, serve_unix
from kubevirt.handler_launcher_com.sockets import LEGACY_NOTIFY_SOCKET
from kubevirt.log import get_logger
from kubevirt.virt_handler.domain_cache import DomainCache, DomainEventError
from kubevirt_api.view import JSON

EVENT_TYPES = ("ADDED", "MODIFIED", "DELETED", "ERROR")
K8S_EVENT_TYPES = ("Normal", "Warning")
# The handler serves in its share directory under the name launchers once dialled directly.
NOTIFY_SOCKET = LEGACY_NOTIFY_SOCKET


class NotifyRequestError(ValueError):
    """A Notify request the handler cannot act on (the message names the field)."""


def _json_object(data: bytes, field: str) -> JSON:
    try:
        value = json.loads(data)
    except (ValueError, UnicodeDecodeError) as err:
        raise NotifyRequestError(f"{field}: not JSON ({err})") from None
    if not isinstance(value, dict):
        raise NotifyRequestError(f"{field}: not a JSON object")
    return value


def _field(obj: JSON, path: str) -> str:
    value: Any = obj
    for part in path.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    if not isinstance(value, str):
        return ""
    return value


class NotifyServer(notify_pb2_grpc.NotifyServicer):
    def __init__(
        self,
        *,
        cache: DomainCache,
        enqueue: Callable[[str], None],
        vmi_store: Store[JSON],
        events: EventSink,
    ) -> None:
        self._cache = cache
        self._enqueue = enqueue
        self._vmis = vmi_store
        self._events = events
        self._log = get_logger()

    def HandleDomainEvent(  # noqa: N802 - the gRPC method name
        self, request: notify_pb2.DomainEventRequest, context: grpc.ServicerContext
    ) -> notify_pb2.Response:
        try:
            key = self.domain_event(request.eventType, request.domainJSON, request.statusJSON)
        except NotifyRequestError as err:
            self._log.warning("domain event refused", reason=str(err))
            return notify_pb2.Response(success=False, message=str(err))
        self._enqueue(key)
        return notify_pb2.Response(success=True)

    def domain_event(self, event_type: str, domain_json: bytes, status_json: bytes) -> str:
        """Applies one domain event to the cache; the key of its VMI."""
        if event_type not in EVENT_TYPES:
            raise NotifyRequestError(f"eventType: {event_type!r} is not one of {', '.join(EVENT_TYPES)}")
        if event_type == "ERROR":
            status = _json_object(status_json, "statusJSON") if status_json else {}
            raise NotifyRequestError(f"launcher reported an error: {status.get('message') or 'unknown'}")
        domain = _json_object(domain_json, "domainJSON")
        try:
            key = self._cache.apply(event_type, domain)
        except DomainEventError as err:
            raise NotifyRequestError(str(err)) from None
        self._log.debug("domain event", key=key, type=event_type, state=_field(domain, "Status.Status"))
        return key

    def HandleK8sEvent(  # noqa: N802 - the gRPC method name
        self, request: notify_pb2.K8sEventRequest, context: grpc.ServicerContext
    ) -> notify_pb2.Response:
        try:
            self.k8s_event(request.eventJSON)
        except NotifyRequestError as err:
            return notify_pb2.Response(success=False, message=str(err))
        return notify_pb2.Response(success=True)

    def k8s_event(self, event_json: bytes) -> None:
        """Records the launcher's event on the VMI it names (which must be ours: same UID)."""
        event = _json_object(event_json, "eventJSON")
        namespace = _field(event, "involvedObject.namespace")
        name = _field(event, "involvedObject.name")
        if not namespace or not name:
            raise NotifyRequestError("eventJSON.involvedObject: namespace and name are required")
        event_type = _field(event, "type")
        if event_type not in K8S_EVENT_TYPES:
            raise NotifyRequestError(f"eventJSON.type: {event_type!r} is not Normal or Warning")
        reason = _field(event, "reason")
        if not reason:
            raise NotifyRequestError("eventJSON.reason: missing")
        vmi = self._vmis.get_by_key(f"{namespace}/{name}")
        if vmi is None or (vmi.get("metadata") or {}).get("uid") != _field(event, "involvedObject.uid"):
            raise NotifyRequestError("VMI not found")
        self._events.event(vmi, event_type, reason, _field(event, "message"))


def serve_notify(path: Path, servicer: NotifyServer) -> grpc.Server:
    """The Notify server (and its version service) listening on the unix socket ``path``."""

    def register(server: grpc.Server) -> None:
        notify_pb2_grpc.add_NotifyServicer_to_server(servicer, server)
        register_notify_info(server)

    return serve_unix(path, register)
