"""A VM's request chain in the fake API, healthy unless a test says otherwise."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from kubevirt.client import NODES, PODS, VIRTUAL_MACHINE_INSTANCES, VIRTUAL_MACHINES, ApiError, Resource
from kubevirt.virtctl.diagnose import Link, Status, diagnose
from kubevirt.virtctl.diagnose.reader import ApiReader
from kubevirt_testing import vm_chain as chain
from kubevirt_testing.fake_kube_api import FakeKubeApi

NS = "ns"
NAME = "vm1"
HANDLERS_NS = "kubevirt"
JSON = dict[str, Any]
RUNNING_VM_STATUS = {"printableStatus": "Running", "created": True, "ready": True, "runStrategy": "Always"}
_DEFAULT: Any = object()


def healthy_pod(uid: str) -> JSON:
    return chain.launcher_pod(NAME, NS, uid)


def scene(
    *,
    vm: JSON | None = _DEFAULT,
    vmi: JSON | None = _DEFAULT,
    pod: Callable[[str], JSON] | None = healthy_pod,
    nodes: list[JSON] | None = None,
    handlers: list[JSON] | None = None,
) -> FakeKubeApi:
    """Stores the chain; ``None`` leaves an object out."""
    api = FakeKubeApi()
    for obj in nodes if nodes is not None else [chain.node()]:
        api.add(NODES, obj)
    for obj in handlers if handlers is not None else [chain.handler_pod("node-a", HANDLERS_NS)]:
        api.add(PODS, obj)
    if vm is _DEFAULT:
        vm = chain.vm(NAME, NS, status=RUNNING_VM_STATUS)
    if vm is not None:
        api.add(VIRTUAL_MACHINES, vm)
    if vmi is _DEFAULT:
        vmi = chain.vmi(NAME, NS, conditions=chain.ready_conditions())
    if vmi is not None:
        created = api.add(VIRTUAL_MACHINE_INSTANCES, vmi)
        if pod is not None:
            api.add(PODS, pod(created["metadata"]["uid"]))
    return api


def walk(api: ApiReader, kind: str = "vm", name: str = NAME) -> list[Link]:
    """The walk at the chain's fixed clock; it must not have written anything."""
    links = diagnose(api, kind, NS, name, now=chain.NOW)
    assert getattr(api, "writes", None) == []
    return links


def by_name(links: list[Link]) -> dict[str, Link]:
    return {link.name: link for link in links}


def broken(links: list[Link]) -> Link:
    """The link the walk stopped at (it must be the last one walked)."""
    assert links[-1].status is Status.BROKEN, [link.to_json() for link in links]
    assert all(link.status is not Status.BROKEN for link in links[:-1])
    return links[-1]


class WithLauncherState:
    """The fake API plus virt-api's ``launcherstate`` subresource: ``answer`` is what virt-handler
    said, or the ApiError virt-api (or the aggregator) answered."""

    def __init__(self, api: FakeKubeApi, answer: JSON | ApiError) -> None:
        self.api = api
        self.answer = answer
        self.writes = api.writes
        self.paths: list[str] = []

    def get(self, resource: Resource, namespace: str | None, name: str) -> JSON:
        return self.api.get(resource, namespace, name)

    def list(
        self,
        resource: Resource,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> tuple[list[JSON], str]:
        return self.api.list(
            resource, namespace, label_selector=label_selector, field_selector=field_selector
        )

    def request(self, method: str, path: str) -> bytes:
        assert method == "GET"
        self.paths.append(path)
        if isinstance(self.answer, ApiError):
            raise self.answer
        return json.dumps(self.answer).encode()


def launcher_state(
    socket: str = "Ready", status: str | None = "Running", reason: str = "Booted", message: str = ""
) -> JSON:
    return {
        "socket": {"state": socket, "message": message},
        "domain": None
        if socket != "Ready"
        else ({"exists": False} if status is None else {"exists": True, "status": status, "reason": reason}),
        "lastDomainEvent": {
            "type": "Modified",
            "status": "Running",
            "reason": "Booted",
            "timestamp": "2026-01-01T00:00:00Z",
        },
    }
