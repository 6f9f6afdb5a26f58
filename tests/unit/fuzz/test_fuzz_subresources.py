"""Fuzz virt-api's subresource API: option bodies, request paths, and the websocket streams (virt-api's
port-forward and virt-handler's console relay).

Allowed outcomes: an answer, or a clean refusal: a 4xx with a ``Status`` body (or, as KubeVirt answers
them, the authorizer's 401 and the router's 404/405 as plain text). A stream relays what it is sent or
closes with 1009 (message too big) when a message is above the bound. Never a 500, a traceback or a hang.
"""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import json
import socket
import socketserver
import threading
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import aiohttp
import pytest
import yaml
from aiohttp import web
from hypothesis import given
from hypothesis import strategies as st

from kubevirt.client import VIRTUAL_MACHINE_INSTANCES, VIRTUAL_MACHINES
from kubevirt.virt_api.rest.bodies import Options, decode_options
from kubevirt.virt_api.rest.status import StatusError
from kubevirt.virt_api.rest.volumes import VolumeHotplug
from kubevirt.virt_config import ClusterConfig
from kubevirt.virt_handler.rest import console
from kubevirt_testing.app_thread import serving
from kubevirt_testing.fake_kube_api import FakeKubeApi
from kubevirt_testing.fuzz_inputs import FUZZ_SETTINGS, json_values, mutated, nested
from kubevirt_testing.subresource_api import (
    BASE,
    USER_HEADERS,
    Reviews,
    fake_api,
    running_vmi,
    subresource_application,
)

pytestmark = pytest.mark.timeout(0)  # hack/fuzz runs many examples; each one is bounded below

KINDS = ["StartOptions", "StopOptions", "RestartOptions", "MigrateOptions", "PauseOptions", "UnpauseOptions"]
OPTION_SEEDS: list[Any] = [
    {"dryRun": ["All"]},
    {"paused": True, "dryRun": []},
    {"gracePeriod": 30},
    {"gracePeriodSeconds": 0, "dryRun": ["All"]},
    {"addedNodeSelector": {"kubernetes.io/hostname": "node01", "zone": "a"}},
    {"unfreezeTimeout": "5m0s"},
    {
        "name": "disk",
        "disk": {"disk": {"bus": "scsi"}},
        "volumeSource": {"persistentVolumeClaim": {"claimName": "c"}},
    },
    {"kind": "StopOptions", "apiVersion": "subresources.kubevirt.io/v1"},
]
BODY_LIMIT = 64 * 1024
MESSAGE_LIMIT = 1024 * 1024
ALPHABET = b"abcdefghijklmnopqrstuvwxyz"
UNMARSHAL_PREFIX = "Can not unmarshal Request body to struct, error: "
REQUEST_TIMEOUT = 30.0


def _yaml(document: Any) -> bytes:
    try:
        return yaml.safe_dump(document).encode()
    except RecursionError:
        return json.dumps(document).encode()


@st.composite
def option_bodies(draw: st.DrawFn) -> bytes:
    """Mostly an edited option struct as JSON or YAML; sometimes anything, or something hostile."""
    shape = draw(st.sampled_from(["json", "json", "yaml", "yaml", "value", "bytes", "hostile"]))
    if shape == "bytes":
        return draw(st.binary(max_size=300))
    if shape == "value":
        return json.dumps(draw(json_values)).encode()
    if shape == "hostile":
        return draw(
            st.sampled_from(
                [
                    b"[" * 5000,
                    b'{"dryRun": ' + b"[" * 20000 + b"]" * 20000 + b"}",
                    b"dryRun:\n" + b"- " * 2000 + b"x",
                    b"a: &a [x, x]\nb: &b [*a, *a, *a]\nc: &c [*b, *b, *b]\ndryRun: [*c, *c, *c]",
                    b"anchor: &s "
                    + b"x" * 30000
                    + b"\naddedNodeSelector: {"
                    + b", ".join(b"k%d: *s" % i for i in range(50))
                    + b"}",
                    b"paused: !!python/object/apply:os.system ['true']",
                    b"gracePeriod: " + b"9" * 5000,
                    b"? [a]\n: b",
                    b'{"dryRun": ["' + b"x" * BODY_LIMIT + b'"]}',
                    b"dryRun:\n" + b"- All\n" * (BODY_LIMIT // 6),
                    b"\xef\xbb\xbfpaused: true",
                    b"%YAML 1.1\n---\npaused: yes",
                ]
            )
        )
    document = draw(mutated(OPTION_SEEDS))
    if draw(st.integers(min_value=0, max_value=9)) == 0:
        document = {
            draw(st.sampled_from(["dryRun", "addedNodeSelector", "paused"])): nested(
                draw(st.sampled_from([50, 101, 900]))
            )
        }
    return _yaml(document) if shape == "yaml" else json.dumps(document).encode()


@pytest.mark.parametrize("kind", KINDS)
@FUZZ_SETTINGS
@given(body=option_bodies())
def test_any_options_body_is_decoded_or_refused_as_a_bad_request(kind: str, body: bytes) -> None:
    outcome = _decode(kind, body)
    if isinstance(outcome, StatusError):
        assert (outcome.code, outcome.reason) == (400, "BadRequest")
        assert outcome.message.startswith(UNMARSHAL_PREFIX)
        assert "\n" not in outcome.message
        return
    assert all(isinstance(item, str) for item in outcome.dry_run)


def _decode(kind: str, body: bytes) -> Options | StatusError:
    try:
        return decode_options(kind, body)
    except StatusError as err:
        return err


# -- volume hotplug -----------------------------------------------------------------------------------

VOLUME_SEEDS: list[Any] = [
    {
        "name": "data",
        "disk": {"name": "", "disk": {"bus": "scsi"}, "serial": "data", "cache": "none"},
        "volumeSource": {"persistentVolumeClaim": {"claimName": "data", "readOnly": False}},
        "dryRun": ["All"],
    },
    {
        "name": "other",
        "disk": {"lun": {"bus": "scsi"}, "blockSize": {"custom": {"logical": 512, "physical": 4096}}},
        "volumeSource": {"dataVolume": {"name": "dv"}},
    },
    {"name": "hot", "dryRun": []},
]
HOTPLUG_GATES = [
    ("HotplugVolumes",),
    ("DeclarativeHotplugVolumes",),
    ("HotplugVolumes", "DeclarativeHotplugVolumes"),
]


@st.composite
def volume_bodies(draw: st.DrawFn) -> bytes:
    """Mostly an edited AddVolumeOptions or RemoveVolumeOptions; otherwise any options body."""
    if draw(st.integers(min_value=0, max_value=3)) == 0:
        return draw(option_bodies())
    document = draw(mutated(VOLUME_SEEDS, deep=True))
    return _yaml(document) if draw(st.booleans()) else json.dumps(document).encode()


def _volume_api() -> FakeKubeApi:
    """A running VM whose template and VMI have a root disk and a hotplugged claim ``hot``."""
    spec = {
        "domain": {"devices": {"disks": [{"name": "root", "disk": {}}, {"name": "hot", "disk": {}}]}},
        "volumes": [
            {"name": "root", "containerDisk": {"image": "img"}},
            {"name": "hot", "persistentVolumeClaim": {"claimName": "hot", "hotpluggable": True}},
        ],
    }
    api = fake_api()
    vm = api.get(VIRTUAL_MACHINES, "ns", "vm")
    vm["spec"]["template"] = {"spec": spec}
    vm["status"] = {"printableStatus": "Running"}
    api.update(VIRTUAL_MACHINES, "ns", vm)
    api.add(VIRTUAL_MACHINE_INSTANCES, {**running_vmi("vm"), "spec": spec})
    return api


@FUZZ_SETTINGS
@given(body=volume_bodies(), gates=st.sampled_from(HOTPLUG_GATES), ephemeral=st.booleans())
def test_any_volume_request_is_accepted_or_refused_cleanly(
    body: bytes, gates: tuple[str, ...], ephemeral: bool
) -> None:
    api = _volume_api()
    hotplug = VolumeHotplug(api, lambda: ClusterConfig.build(feature_gates=gates))
    for call in (hotplug.add, hotplug.remove):
        try:
            outcome: int | StatusError = call("ns", "vm", body, ephemeral=ephemeral)
        except StatusError as err:
            outcome = err
        if isinstance(outcome, int):
            assert outcome == 202
            continue
        assert 400 <= outcome.code < 500, outcome.body()
        assert "\n" not in outcome.message


# -- requests over HTTP -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def subresource_port() -> Iterator[int]:
    with serving(subresource_application(fake_api(), Reviews())) as port:
        yield port


SEGMENTS = st.one_of(
    st.sampled_from(
        ["vm", "vmi", "ns", "missing", "a%2F..%2Fvm", "..%2F..%2Fvirtualmachines%2Fvm", "%2E%2E", "%2e"]
    ),
    st.sampled_from(["Not_A_Name", "a%252Fb", "x" * 300, "%76m", "%00", "%ff%fe", "-vm", "a.b", ""]),
    st.text(max_size=20).map(lambda text: quote(text, safe="")),
)
OPERATIONS = [
    ("PUT", "virtualmachines", "start"),
    ("PUT", "virtualmachines", "stop"),
    ("PUT", "virtualmachines", "restart"),
    ("PUT", "virtualmachines", "migrate"),
    ("PUT", "virtualmachineinstances", "pause"),
    ("PUT", "virtualmachineinstances", "unpause"),
    ("PUT", "virtualmachineinstances", "freeze"),
    ("PUT", "virtualmachineinstances", "softreboot"),
    ("PUT", "virtualmachines", "addvolume"),
    ("PUT", "virtualmachineinstances", "removevolume"),
    ("GET", "virtualmachineinstances", "launcherstate"),
    ("POST", "virtualmachines", "start"),
    ("PUT", "virtualmachineinstances", "start"),
    ("PUT", "pods", "start"),
]


@st.composite
def requests(draw: st.DrawFn) -> tuple[str, str, bytes]:
    method, resource, subresource = draw(st.sampled_from(OPERATIONS))
    # Mostly names that exist, so the body is read; otherwise any segment at all.
    namespace = draw(st.one_of(st.just("ns"), st.just("ns"), SEGMENTS))
    name = draw(st.one_of(st.sampled_from(["vm", "vmi"]), st.sampled_from(["vm", "vmi"]), SEGMENTS))
    base = BASE.replace("/namespaces/ns", f"/namespaces/{namespace}")
    return method, f"{base}/{resource}/{name}/{subresource}", draw(option_bodies())


def _send(port: int, method: str, path: str, body: bytes) -> tuple[int, str, bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=REQUEST_TIMEOUT)
    try:
        connection.request(method, path, body=body, headers=USER_HEADERS)
        response = connection.getresponse()
        return response.status, response.getheader("Content-Type") or "", response.read()
    finally:
        connection.close()


@FUZZ_SETTINGS
@given(request=requests())
def test_any_subresource_request_is_answered_or_refused_cleanly(
    subresource_port: int, request: tuple[str, str, bytes]
) -> None:
    method, path, body = request
    code, content_type, answer = _send(subresource_port, method, path, body)
    assert code < 500, (code, answer[:500])
    if code < 400:
        return
    if content_type.startswith("application/json"):
        status = json.loads(answer)
        assert (status["kind"], status["code"]) == ("Status", code)
        return
    # Plain text: the authorizer's refusal (401, as KubeVirt's) or the router's 404/405.
    assert code in (401, 404, 405), (code, answer[:500])


# -- streams ------------------------------------------------------------------------------------------


class _Echo(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        with contextlib.suppress(OSError):  # the relay may close first
            while data := self.request.recv(65536):
                self.request.sendall(data)


def _echo_socket(end: socket.socket) -> None:
    with end, contextlib.suppress(OSError):  # the relay may close its end first
        while data := end.recv(65536):
            end.sendall(data)


async def _handler_console(request: web.Request) -> web.StreamResponse:
    """virt-handler's console relay, with a socket pair standing in for QEMU's serial socket."""
    ours, qemus = socket.socketpair()
    threading.Thread(target=_echo_socket, args=(qemus,), daemon=True).start()
    return await console.relay(request, ours, asyncio.Event())


@pytest.fixture(scope="module")
def stream_urls() -> Iterator[dict[str, str]]:
    socketserver.ThreadingTCPServer.daemon_threads = True
    with socketserver.ThreadingTCPServer(("127.0.0.1", 0), _Echo) as guest:
        threading.Thread(target=guest.serve_forever, daemon=True).start()
        api = fake_api()
        api.add(VIRTUAL_MACHINE_INSTANCES, running_vmi("guest"))
        handler_app = web.Application()
        handler_app.router.add_get("/console", _handler_console)
        guest_port = guest.server_address[1]
        with (
            serving(subresource_application(api, Reviews())) as api_port,
            serving(handler_app) as handler_port,
        ):
            yield {
                "portforward": f"http://127.0.0.1:{api_port}{BASE}/virtualmachineinstances/guest/portforward/{guest_port}",
                "console": f"http://127.0.0.1:{handler_port}/console",
            }
        guest.shutdown()


SIZES = st.one_of(
    st.integers(min_value=0, max_value=2048),
    st.sampled_from([32 * 1024, MESSAGE_LIMIT - 1, MESSAGE_LIMIT, MESSAGE_LIMIT + 1, 3 * MESSAGE_LIMIT]),
)
MESSAGES = st.lists(st.tuples(st.sampled_from(["binary", "text"]), SIZES), min_size=1, max_size=5)


async def _exchange(url: str, messages: list[tuple[str, int]]) -> tuple[bytes, bytes, int | None]:
    """Sends ``messages`` (up to the first one above the bound) while reading what comes back; returns
    what was sent, what came back and the close code (None when the stream stayed open)."""
    oversize = any(size >= MESSAGE_LIMIT for _, size in messages)
    sent, received = bytearray(), bytearray()
    async with (
        aiohttp.ClientSession() as session,
        session.ws_connect(url, protocols=("plain.kubevirt.io",), max_msg_size=0, headers=USER_HEADERS) as ws,
    ):
        collecting = asyncio.ensure_future(_collect(ws, received))
        with contextlib.suppress(ConnectionError):  # the reset for an oversize message's unread rest
            for index, (kind, size) in enumerate(messages):
                payload = (ALPHABET[index:] + ALPHABET * (size // 26 + 1))[:size]
                if kind == "text":
                    await ws.send_str(payload.decode())
                else:
                    await ws.send_bytes(payload)
                if size >= MESSAGE_LIMIT:
                    break
                sent += payload
        while not oversize and len(received) < len(sent) and not collecting.done():
            await asyncio.sleep(0.01)
        if not oversize and not collecting.done():
            collecting.cancel()
            return bytes(sent), bytes(received), None
        await collecting
    return bytes(sent), bytes(received), ws.close_code


async def _collect(ws: aiohttp.ClientWebSocketResponse, received: bytearray) -> None:
    while (message := await ws.receive()).type == aiohttp.WSMsgType.BINARY:
        received += message.data


@pytest.mark.parametrize("stream", ["portforward", "console"])
@FUZZ_SETTINGS
@given(messages=MESSAGES)
def test_any_stream_traffic_is_relayed_or_closed_as_too_big(
    stream_urls: dict[str, str], stream: str, messages: list[tuple[str, int]]
) -> None:
    sent, received, close_code = asyncio.run(
        asyncio.wait_for(_exchange(stream_urls[stream], messages), REQUEST_TIMEOUT)
    )
    if any(size >= MESSAGE_LIMIT for _, size in messages):
        # 1009, unless the reset for the message's unread rest reached the client before the close frame.
        assert close_code in (aiohttp.WSCloseCode.MESSAGE_TOO_BIG, aiohttp.WSCloseCode.ABNORMAL_CLOSURE)
        assert sent.startswith(received)
    else:
        assert (close_code, received) == (None, sent)
