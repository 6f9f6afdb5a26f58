"""Reaching virt-handler's API (port 8186, mutual TLS) on the node that runs a VMI.

virt-api finds the handler pod in its own namespace by label and node, builds the URL of the VMI's
operation on the pod's address, and calls it with a 10 s timeout. A non-2xx answer is an error carrying
the code and the handler's message.
"""

from __future__ import annotations

import ipaddress
import ssl
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import urllib3

from kubevirt.client import JSON, PODS, ApiError, KubeApi
from kubevirt.virt_api.rest.status import bad_request
from kubevirt_api.core.v1 import VirtualMachineInstancePhase

CONSOLE_SERVER_PORT = 8186
HANDLER_TIMEOUT = 10.0
HANDLER_SELECTOR = "kubevirt.io in (virt-handler)"


class HandlerCallError(Exception):
    """virt-handler could not be reached or did not answer 2xx."""


class HandlerTransport(Protocol):
    def put(self, url: str, body: bytes) -> None: ...

    def get(self, url: str) -> bytes: ...


def host_for_uri(ip: str) -> str:
    try:
        return f"[{ip}]" if ipaddress.ip_address(ip).version == 6 else ip
    except ValueError:
        return ip


@dataclass
class HandlerLocator:
    """Finds the virt-handler serving a VMI and the URL of an operation on it."""

    api: KubeApi
    namespace: str
    port: int = CONSOLE_SERVER_PORT

    def url_for(self, vmi: JSON, operation: str, *, scheme: str = "https") -> str:
        phase = str((vmi.get("status") or {}).get("phase") or "")
        if phase not in (VirtualMachineInstancePhase.RUNNING, VirtualMachineInstancePhase.SCHEDULED):
            raise bad_request(
                "Unable to connect to VirtualMachineInstance because phase is "
                f"{phase} instead of Running or Scheduled"
            )
        node = str((vmi.get("status") or {}).get("nodeName") or "")
        pod = self._handler_pod(node)
        ip = str((pod.get("status") or {}).get("podIP") or "")
        meta = vmi["metadata"]
        return (
            f"{scheme}://{host_for_uri(ip)}:{self.port}/v1/namespaces/{meta['namespace']}"
            f"/virtualmachineinstances/{meta['name']}/{operation}"
        )

    def _handler_pod(self, node: str) -> JSON:
        try:
            pods, _ = self.api.list(PODS, self.namespace, label_selector=HANDLER_SELECTOR)
        except ApiError as err:
            raise bad_request(err.message) from None
        # Filtered here rather than by a field selector: the same answer, and the fake API has none.
        on_node = [pod for pod in pods if (pod.get("spec") or {}).get("nodeName") == node]
        if len(on_node) > 1:
            raise bad_request(f"Expected to find one Pod, found {len(on_node)} Pods")
        if not on_node:
            raise bad_request(f"No virt-handler on node {node} found")
        return on_node[0]


class TLSHandlerTransport:
    """HTTPS to virt-handler with virt-api's client certificate.

    The handler is dialled by its pod IP, which its certificate does not name (KubeVirt's names none
    either): the contexts check virt-handler's identity in the certificate instead. urllib3 matches the
    host name by itself unless told not to, whatever the context says, so that is turned off here too.
    """

    def __init__(self, contexts: Callable[[], ssl.SSLContext]) -> None:
        self._contexts = contexts
        self._context: ssl.SSLContext | None = None
        self._pool = urllib3.PoolManager(retries=False)

    def _current_pool(self) -> urllib3.PoolManager:
        # A renewed certificate or CA comes as a new context: connections made with the old one go.
        context = self._contexts()
        if context is not self._context:
            self._pool.clear()
            self._pool = urllib3.PoolManager(ssl_context=context, assert_hostname=False, retries=False)
            self._context = context
        return self._pool

    def put(self, url: str, body: bytes) -> None:
        self._call("PUT", url, body)

    def get(self, url: str) -> bytes:
        return self._call("GET", url, None)

    def _call(self, method: str, url: str, body: bytes | None) -> bytes:
        headers = {"Accept": "application/json"} if method == "GET" else {}
        try:
            response = self._current_pool().request(
                method, url, body=body, headers=headers, timeout=urllib3.Timeout(total=HANDLER_TIMEOUT)
            )
        except urllib3.exceptions.HTTPError as err:
            raise HandlerCallError(f"{method} {url}: {err}") from None
        if not 200 <= response.status < 300:
            text = response.data.decode(errors="replace")
            status = f"{response.status} {response.reason or ''}".strip()
            raise HandlerCallError(f"unexpected return code {response.status} ({status}), message: {text}")
        return bytes(response.data)
