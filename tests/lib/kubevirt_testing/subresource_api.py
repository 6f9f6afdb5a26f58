"""virt-api's subresource API as virt-api serves it, over a fake API server: the webhook server's
application (its ``/healthz`` included) with the subresource routes and the authorising middleware.

The front proxy's client certificate is taken as given (no TLS); every SubjectAccessReview is recorded and
answered with :attr:`Reviews.allowed`. Requests carry the user in :data:`USER_HEADERS`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from kubevirt.client import VIRTUAL_MACHINE_INSTANCES, VIRTUAL_MACHINES
from kubevirt.service.aggregation.front_proxy import FrontProxyTrust
from kubevirt.virt_api.rest.authorizer import Authorizer
from kubevirt.virt_api.rest.handler import HandlerLocator
from kubevirt.virt_api.rest.lifecycle import VMLifecycle
from kubevirt.virt_api.rest.portforward import PortForwarder
from kubevirt.virt_api.rest.server import SubresourceAPI, subresource_middleware
from kubevirt.virt_api.rest.vmi_operations import VMIOperations
from kubevirt.virt_api.webhooks.server import WebhookServer
from kubevirt_testing.fake_kube_api import FakeKubeApi

JSON = dict[str, Any]
NAMESPACE = "ns"
BASE = f"/apis/subresources.kubevirt.io/v1/namespaces/{NAMESPACE}"
USER_HEADERS = {"X-Remote-User": "alice", "X-Remote-Group": "devs"}


@dataclass
class Reviews:
    """The SubjectAccessReviews made, all answered alike."""

    allowed: bool = True
    seen: list[JSON] = field(default_factory=list)

    def __call__(self, review: JSON) -> JSON:
        self.seen.append(review)
        return {"status": {"allowed": self.allowed, "reason": "" if self.allowed else "no"}}

    def attributes(self) -> list[JSON]:
        return [review["spec"]["resourceAttributes"] for review in self.seen]


@dataclass
class RecordingTransport:
    """virt-handler, answering every call."""

    calls: list[tuple[str, str, bytes]] = field(default_factory=list)

    def put(self, url: str, body: bytes) -> None:
        self.calls.append(("PUT", url, body))

    def get(self, url: str) -> bytes:
        self.calls.append(("GET", url, b""))
        return b"{}"


def halted_vm(name: str = "vm") -> JSON:
    return {"metadata": {"name": name, "namespace": NAMESPACE}, "spec": {"runStrategy": "Halted"}}


def running_vmi(name: str = "vmi", address: str = "127.0.0.1") -> JSON:
    return {
        "metadata": {"name": name, "namespace": NAMESPACE, "uid": f"uid-{name}"},
        "spec": {},
        "status": {
            "phase": "Running",
            "nodeName": "node01",
            "interfaces": [{"name": "default", "ipAddress": address}],
        },
    }


def fake_api() -> FakeKubeApi:
    """A halted VM ``vm`` and a running VMI ``vmi`` (whose handler is never found: no handler pod)."""
    api = FakeKubeApi()
    api.add(VIRTUAL_MACHINES, halted_vm())
    api.add(VIRTUAL_MACHINE_INSTANCES, running_vmi())
    return api


def subresource_application(
    api: FakeKubeApi, reviews: Reviews, transport: RecordingTransport | None = None
) -> web.Application:
    vmis = VMIOperations(api, HandlerLocator(api, "kubevirt"), transport or RecordingTransport())
    subresources = SubresourceAPI(VMLifecycle(api), vmis, portforward=PortForwarder(api))
    server = WebhookServer({}, extensions=[subresources.install])
    middleware = subresource_middleware(
        Authorizer(reviews),
        lambda: FrontProxyTrust(client_ca=""),
        exempt=server.paths,
        peer=lambda _request: "front-proxy-client",
    )
    return server.application(middlewares=[middleware])
