"""Sends domain and Kubernetes events to virt-handler's notify socket (``kubevirt.notify.v1.Notify``).

The handler may be down or restarting; sends are retried with exponential backoff (tenacity) until a
deadline, and the channel reconnects by itself once the socket answers again.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import grpc
import tenacity

from kubevirt.handler_launcher_com.notify.v1 import notify_pb2, notify_pb2_grpc
from kubevirt.handler_launcher_com.sockets import grpc_target
from kubevirt.log import get_logger
from kubevirt.virt_launcher import COMPONENT
from kubevirt_api.core.v1.constants import API_VERSION

SEND_TIMEOUT = 5.0


class NotifyUnavailableError(Exception):
    """virt-handler's notify server could not be reached."""


class NotifyRejectedError(Exception):
    """virt-handler answered the event with ``success=false``."""


def vmi_event(
    namespace: str, name: str, uid: str, event_type: str, reason: str, message: str
) -> dict[str, Any]:
    """A Kubernetes event about the VMI, as KubeVirt's launcher sends it for virt-handler to record."""
    return {
        "involvedObject": {
            "kind": "VirtualMachineInstance",
            "namespace": namespace,
            "name": name,
            "uid": uid,
            "apiVersion": API_VERSION,
        },
        "type": event_type,
        "reason": reason,
        "message": message,
    }


class NotifyClient:
    def __init__(self, socket_path: Path, *, give_up_after: float = 60.0, max_backoff: float = 5.0) -> None:
        self.socket_path = socket_path
        self._lock = threading.Lock()
        self._channel: grpc.Channel | None = None
        self._stub: notify_pb2_grpc.NotifyStub | None = None
        self._retrying = tenacity.Retrying(
            retry=tenacity.retry_if_exception_type(NotifyUnavailableError),
            wait=tenacity.wait_exponential(multiplier=0.05, max=max_backoff),
            stop=tenacity.stop_after_delay(give_up_after),
            reraise=True,
        )
        self._log = get_logger(component=COMPONENT)

    @property
    def available(self) -> bool:
        """virt-handler created the notify socket (events are then delivered, retrying if needed)."""
        return self.socket_path.exists()

    def close(self) -> None:
        with self._lock:
            if self._channel is not None:
                self._channel.close()
            self._channel = self._stub = None

    def send_domain_event(
        self, event_type: str, domain: dict[str, Any], status: dict[str, Any] | None = None
    ) -> None:
        request = notify_pb2.DomainEventRequest(
            domainJSON=json.dumps(domain).encode(),
            statusJSON=json.dumps(status).encode() if status is not None else b"",
            eventType=event_type,
        )
        self._send(lambda stub: stub.HandleDomainEvent(request, timeout=SEND_TIMEOUT))

    def send_k8s_event(self, event: dict[str, Any]) -> None:
        request = notify_pb2.K8sEventRequest(eventJSON=json.dumps(event).encode())
        self._send(lambda stub: stub.HandleK8sEvent(request, timeout=SEND_TIMEOUT))

    def send_k8s_event_in_background(self, event: dict[str, Any]) -> threading.Thread:
        """Sends without holding up the caller (a command virt-handler waits for); a failure is logged."""

        def send() -> None:
            try:
                self.send_k8s_event(event)
            except (NotifyUnavailableError, NotifyRejectedError) as err:
                self._log.warning("recording an event failed", reason=event.get("reason"), error=str(err))

        thread = threading.Thread(target=send, name="k8s-event", daemon=True)
        thread.start()
        return thread

    def _send(self, call: Any) -> None:
        reply: notify_pb2.Response = self._retrying(self._attempt, call)
        if not reply.success:
            raise NotifyRejectedError(reply.message)

    def _attempt(self, call: Any) -> notify_pb2.Response:
        try:
            result: notify_pb2.Response = call(self._connected_stub())
            return result
        except grpc.RpcError as err:
            self._log.debug("notify server unreachable, retrying", reason=str(err))
            # A fresh channel on the next attempt: the handler may have re-created its socket.
            self.close()
            raise NotifyUnavailableError(str(err)) from err

    def _connected_stub(self) -> notify_pb2_grpc.NotifyStub:
        with self._lock:
            if self._stub is None:
                if not self.socket_path.exists():
                    raise NotifyUnavailableError(f"{self.socket_path} does not exist")
                self._channel = grpc.insecure_channel(grpc_target(self.socket_path))
                self._stub = notify_pb2_grpc.NotifyStub(self._channel)
            return self._stub
