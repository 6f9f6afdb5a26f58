"""virt-handler's notify side: the domain cache, the Notify server over a real unix socket, and the
pipe socket it makes in a launcher pod's root (a stand-in directory), carrying the launcher's events."""

from __future__ import annotations

import json
import os
import shutil
import socket
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from kubevirt import host_disk
from kubevirt.controller import Store
from kubevirt.handler_launcher_com.notify.v1 import notify_pb2, notify_pb2_grpc
from kubevirt.handler_launcher_com.sockets import READY_SOCKET, grpc_target
from kubevirt.podroot import PodRoot
from kubevirt.virt_handler.domain_cache import DomainCache
from kubevirt.virt_handler.notify_pipes import NotifyPipeError, NotifyPipes
from kubevirt.virt_handler.notify_server import NotifyServer, serve_notify
from kubevirt.virt_launcher.notify_client import NotifyClient, vmi_event
from kubevirt_testing.launcher_socket import sockets_dir

JSON = dict[str, Any]
UID = "0b7c1f5e-uid"


def _domain(state: str = "Running", *, deleted: bool = False) -> JSON:
    meta: JSON = {"name": "tiny", "namespace": "default", "uid": UID}
    if deleted:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {
        "ObjectMeta": meta,
        "Spec": {"Metadata": {"KubeVirt": {"UID": UID}}},
        "Status": {"Status": state, "Reason": "Unknown"},
    }


class Events:
    def __init__(self) -> None:
        self.seen: list[tuple[str, str, str, str]] = []

    def event(self, obj: Any, event_type: str, reason: str, message: str) -> None:
        self.seen.append((obj["metadata"]["name"], event_type, reason, message))


class Handler:
    """The Notify server on a short-pathed socket, with what it enqueued and recorded."""

    def __init__(self, directory: Path) -> None:
        self.cache = DomainCache()
        self.enqueued: list[str] = []
        self.woken = threading.Event()
        self.store: Store[JSON] = Store()
        self.events = Events()
        self.socket = directory / "domain-notify.sock"

        def enqueue(key: str) -> None:
            self.enqueued.append(key)
            self.woken.set()

        self.servicer = NotifyServer(
            cache=self.cache, enqueue=enqueue, vmi_store=self.store, events=self.events
        )
        self.server = serve_notify(self.socket, self.servicer)

    def stub(self) -> notify_pb2_grpc.NotifyStub:
        return notify_pb2_grpc.NotifyStub(grpc.insecure_channel(grpc_target(self.socket)))


@pytest.fixture
def short_dir() -> Iterator[Path]:
    directory = Path(tempfile.mkdtemp(prefix="n", dir="/tmp"))  # unix socket paths are short
    yield directory
    shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture
def handler(short_dir: Path) -> Iterator[Handler]:
    handler = Handler(short_dir)
    yield handler
    handler.server.stop(grace=0)


def test_the_cache_follows_events_and_drops_the_final_one() -> None:
    cache = DomainCache()
    assert cache.apply("ADDED", _domain("Running")) == "default/tiny"
    cache.apply("MODIFIED", _domain("Paused"))
    assert (cache.get("default/tiny") or {})["Status"]["Status"] == "Paused"
    cache.apply("MODIFIED", _domain(deleted=True))
    assert cache.get("default/tiny") is None
    cache.resync("default/tiny", _domain("Running"))
    assert cache.keys() == ["default/tiny"]
    cache.resync("default/tiny", None)
    assert cache.keys() == []


def test_a_domain_event_fills_the_cache_and_enqueues_its_vmi(handler: Handler) -> None:
    request = notify_pb2.DomainEventRequest(
        domainJSON=json.dumps(_domain("Paused")).encode(), eventType="MODIFIED"
    )
    reply = handler.stub().HandleDomainEvent(request, timeout=5)
    assert reply.success
    assert handler.enqueued == ["default/tiny"]
    assert (handler.cache.get("default/tiny") or {})["Status"]["Status"] == "Paused"


@pytest.mark.parametrize(
    ("event_type", "domain_json", "message"),
    [
        ("MODIFIED", b"{not json", "domainJSON: not JSON"),
        ("MODIFIED", b"[]", "domainJSON: not a JSON object"),
        (
            "MODIFIED",
            json.dumps({"ObjectMeta": {"namespace": "default"}}).encode(),
            "ObjectMeta.name: missing",
        ),
        ("RENAMED", json.dumps(_domain()).encode(), "eventType: 'RENAMED'"),
    ],
)
def test_a_malformed_domain_event_is_refused_with_the_field(
    handler: Handler, event_type: str, domain_json: bytes, message: str
) -> None:
    request = notify_pb2.DomainEventRequest(domainJSON=domain_json, eventType=event_type)
    reply = handler.stub().HandleDomainEvent(request, timeout=5)
    assert not reply.success
    assert message in reply.message
    assert handler.enqueued == []
    assert handler.cache.keys() == []


def _k8s_event(uid: str = UID, **changes: Any) -> bytes:
    event = {
        "involvedObject": {
            "kind": "VirtualMachineInstance",
            "namespace": "default",
            "name": "tiny",
            "uid": uid,
        },
        "type": "Warning",
        "reason": "IOerror",
        "message": "VM Paused due to IO error at the volume: disk0",
        **changes,
    }
    return json.dumps(event).encode()


def test_a_launcher_event_is_recorded_on_its_vmi(handler: Handler) -> None:
    handler.store.upsert({"metadata": {"name": "tiny", "namespace": "default", "uid": UID}})
    reply = handler.stub().HandleK8sEvent(notify_pb2.K8sEventRequest(eventJSON=_k8s_event()), timeout=5)
    assert reply.success
    assert handler.events.seen == [
        ("tiny", "Warning", "IOerror", "VM Paused due to IO error at the volume: disk0")
    ]


def test_a_launcher_event_for_another_vmi_or_malformed_is_refused(handler: Handler) -> None:
    handler.store.upsert({"metadata": {"name": "tiny", "namespace": "default", "uid": UID}})
    stub = handler.stub()
    wrong_uid = stub.HandleK8sEvent(notify_pb2.K8sEventRequest(eventJSON=_k8s_event("other")), timeout=5)
    assert (wrong_uid.success, wrong_uid.message) == (False, "VMI not found")
    bad_type = stub.HandleK8sEvent(notify_pb2.K8sEventRequest(eventJSON=_k8s_event(type="Fatal")), timeout=5)
    assert not bad_type.success
    assert "eventJSON.type" in bad_type.message
    assert handler.events.seen == []


def test_the_launchers_tolerated_small_pv_event_reaches_its_vmi_in_the_background(handler: Handler) -> None:
    handler.store.upsert({"metadata": {"name": "tiny", "namespace": "default", "uid": UID}})
    client = NotifyClient(handler.socket, give_up_after=5)
    message = host_disk.tolerated_message(1 << 30, 1_000_000_000, 10)
    try:
        event = vmi_event("default", "tiny", UID, "Normal", host_disk.TOLERATED_SMALL_PV_REASON, message)
        assert event["involvedObject"]["apiVersion"] == "kubevirt.io/v1"
        client.send_k8s_event_in_background(event).join(timeout=10)
    finally:
        client.close()
    assert handler.events.seen == [("tiny", "Normal", "ToleratedSmallPV", message)]


QEMU_USER = 107


def _pod_root(short_dir: Path) -> Path:
    root = short_dir / "root"
    (root / "var" / "run" / "kubevirt").mkdir(parents=True)
    return root


def _launcher_socket(short_dir: Path) -> Path:
    """Stands for the command socket of a launcher running as the qemu user, in its pod's sockets volume
    below a pods directory (where virt-handler reads its owner)."""
    path = sockets_dir(short_dir / "pods", "pod-uid") / READY_SOCKET
    if not path.exists():
        path.parent.mkdir(parents=True)
        with socket.socket(socket.AF_UNIX) as server:
            server.bind(str(path))
    os.chown(path, QEMU_USER, QEMU_USER)
    return path


def test_the_pipe_in_the_pod_carries_the_launchers_events(handler: Handler, short_dir: Path) -> None:
    root = _pod_root(short_dir)
    pipes = NotifyPipes(handler.socket, pod_root=lambda _socket: PodRoot(root))
    client = NotifyClient(root / "var/run/kubevirt/domain-notify-pipe.sock", give_up_after=5)
    try:
        pipes.ensure(UID, _launcher_socket(short_dir))
        pipes.ensure(UID, _launcher_socket(short_dir))  # once per VMI
        assert client.available
        owner = os.stat(client.socket_path)
        assert (owner.st_uid, owner.st_gid, owner.st_mode & 0o777) == (QEMU_USER, QEMU_USER, 0o600)
        client.send_domain_event("MODIFIED", _domain("Paused"))
        client.send_domain_event("MODIFIED", _domain(deleted=True))
        assert handler.enqueued == ["default/tiny", "default/tiny"]
        assert handler.cache.get("default/tiny") is None
    finally:
        client.close()
        pipes.shut_down()


def test_a_pod_that_links_its_share_dir_out_of_its_root_gets_no_pipe(
    handler: Handler, short_dir: Path
) -> None:
    root = short_dir / "root"
    (root / "var" / "run").mkdir(parents=True)
    outside = short_dir / "host"
    outside.mkdir()
    os.symlink(outside, root / "var" / "run" / "kubevirt")  # an absolute host path: resolved inside the root
    pipes = NotifyPipes(handler.socket, pod_root=lambda _socket: PodRoot(root))
    try:
        with pytest.raises(NotifyPipeError, match=r"domain-notify-pipe\.sock in the pod"):
            pipes.ensure(UID, _launcher_socket(short_dir))
        assert list(outside.iterdir()) == []
        assert not pipes.running(UID)
    finally:
        pipes.shut_down()
