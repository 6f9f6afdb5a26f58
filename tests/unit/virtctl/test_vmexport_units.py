"""``virtctl vmexport``'s parts on their own: the flag checks and what they build, the link picked for a
download, the gzip reader, pb's progress line, and port-forward's channel framing (against a fake
websocket) and port lookup."""

from __future__ import annotations

import gzip
import struct
from typing import Any

import pytest
import websocket

from kubevirt.service.durations import SECOND
from kubevirt.virtctl.vmexport import portforward
from kubevirt.virtctl.vmexport.exports import poll
from kubevirt.virtctl.vmexport.flags import (
    BINARY_OUTPUT_WARNING,
    DOWNLOAD,
    ERR_INCOMPATIBLE_EXPORT_TYPE,
    ERR_REQUIRED_EXPORT_TYPE,
    Flags,
    VMExportError,
    VMExportInfo,
    build_info,
    check_arguments,
    key_values,
    parse_retry,
)
from kubevirt.virtctl.vmexport.links import manifest_urls, volume_url, with_service_host
from kubevirt.virtctl.vmexport.portforward import ChannelStream, selector_string, target_port
from kubevirt.virtctl.vmexport.progress import ProgressBar, format_bytes
from kubevirt.virtctl.vmexport.transfer import gunzip

BINARY, CLOSE = websocket.ABNF.OPCODE_BINARY, websocket.ABNF.OPCODE_CLOSE


# Flags.


def _check(*arguments: str, **flags: Any) -> tuple[str, str]:
    return check_arguments(arguments, Flags(**flags))


@pytest.mark.parametrize(
    ("arguments", "flags", "message"),
    [
        ((), {}, "accepts 2 arg(s), received 0"),
        (("create",), {"pvc": "p"}, "accepts 2 arg(s), received 1"),
        (("create", "delete", "x"), {}, "accepts 2 arg(s), received 3"),
        (("upload", "x"), {}, "invalid function 'upload'"),
        (("create", "x"), {}, ERR_REQUIRED_EXPORT_TYPE),
        (
            ("create", "x"),
            {"pvc": "p", "insecure": True},
            "the '--insecure' flag is incompatible with 'create'",
        ),
        (
            ("create", "x"),
            {"pvc": "p", "local_port": "5410"},
            "the '--local-port' flag is incompatible with 'create'",
        ),
        (("create", "x"), {"vm": "v", "retry": 1}, "the '--retry' flag is incompatible with 'create'"),
        (("delete", "x"), {"pvc": "p"}, ERR_INCOMPATIBLE_EXPORT_TYPE),
        (("delete", "x"), {"insecure": True}, "the '--insecure' flag is incompatible with 'delete'"),
        (("delete", "x"), {"labels": ("a=b",)}, "the '--labels' flag is incompatible with 'delete'"),
        (
            ("delete", "x"),
            {"readiness_timeout": "1m"},
            "the '--readiness-timeout' flag is incompatible with 'delete'",
        ),
        (
            ("download", "x"),
            {"manifest": True, "pvc": "p"},
            "the '--pvc' flag is incompatible with '--manifest'",
        ),
        (
            ("download", "x"),
            {"manifest": True, "vm": "v", "volume": "disk"},
            "the '--volume' flag is incompatible with '--manifest'",
        ),
        (
            ("download", "x"),
            {"manifest": True, "manifest_output_format": "xml"},
            "--manifest-output-format is not a valid value, acceptable values are json/yaml",
        ),
        (
            ("download", "x"),
            {"port_forward": True, "local_port": "test", "output": "f"},
            "--local-port is not a valid value, acceptable values are valid port numbers",
        ),
        (
            ("download", "x"),
            {"port_forward": True, "local_port": "70000", "output": "f"},
            "--local-port is not a valid value, acceptable values are valid port numbers",
        ),
        (
            ("download", "x"),
            {"format": "zip"},
            "--format is not a valid value, acceptable values are gzip/raw",
        ),
        (
            ("download", "x"),
            {"retry": -1},
            "--retry is not a valid value, acceptable values are positive integers",
        ),
        (("download", "x"), {}, BINARY_OUTPUT_WARNING),
        (
            ("download", "x"),
            {"output": "f", "given": frozenset({"vm", "pvc", "snapshot"})},
            "if any flags in the group [vm snapshot pvc] are set none of the others can be; "
            "[pvc snapshot vm] were all set",
        ),
        (
            ("download", "x"),
            {"output": "f", "given": frozenset({"keep-vme", "delete-vme"})},
            "if any flags in the group [keep-vme delete-vme] are set none of the others can be; "
            "[delete-vme keep-vme] were all set",
        ),
    ],
)
def test_flags_that_do_not_fit_are_refused_with_kubevirts_message(
    arguments: tuple[str, ...], flags: dict[str, Any], message: str
) -> None:
    with pytest.raises(VMExportError) as raised:
        _check(*arguments, **flags)
    assert str(raised.value) == message


def test_the_function_is_case_insensitive_and_flags_that_fit_pass() -> None:
    assert _check("CREATE", "x", pvc="p", ttl="1h", labels=("a=b",)) == ("create", "x")
    assert _check("download", "x", manifest=True, vm="v", manifest_output_format="JSON") == (DOWNLOAD, "x")
    assert _check("delete", "x", ttl="1h", manifest=True) == ("delete", "x")


def test_retry_is_parsed_as_pflag_parses_an_int() -> None:
    assert parse_retry("3") == 3
    with pytest.raises(VMExportError, match=r'invalid argument "x" for "--retry" flag: strconv\.ParseInt'):
        parse_retry("x")


def test_labels_are_csv_lists_of_key_values() -> None:
    assert key_values(["a=b,c=d=e", 'f=g,"h=i,j"', "novalue"]) == {"a": "b", "c": "d=e", "f": "g", "h": "i,j"}


def test_a_download_with_a_source_creates_and_port_forward_goes_insecure_through_localhost() -> None:
    flags = Flags(pvc="claim", output="-", port_forward=True, local_port="5410", format="raw", ttl="90s")
    info = build_info("download", "x", flags)
    assert info.source == {"apiGroup": "", "kind": "PersistentVolumeClaim", "name": "claim"}
    assert (info.should_create, info.insecure, info.decompress) == (True, True, True)
    assert (info.service_url, info.output_file, info.ttl_nanoseconds) == ("127.0.0.1:5410", "", 90 * SECOND)
    assert info.readiness_timeout == 120.0
    given = build_info(
        "download", "x", Flags(vm="v", output="f", service_url="svc:1", readiness_timeout="1ns")
    )
    assert given.source == {"apiGroup": "kubevirt.io", "kind": "VirtualMachine", "name": "v"}
    assert (given.service_url, given.insecure, given.readiness_timeout) == ("svc:1", False, 1e-9)
    snapshot = build_info("create", "x", Flags(snapshot="s"))
    assert snapshot.source["apiGroup"] == "snapshot.kubevirt.io"
    assert not snapshot.should_create
    with pytest.raises(VMExportError, match='time: invalid duration "soon"'):
        build_info("create", "x", Flags(pvc="p", ttl="soon"))
    with pytest.raises(VMExportError, match='time: missing unit in duration "5"'):
        build_info("download", "x", Flags(output="f", readiness_timeout="5"))


# Polling.


def test_poll_checks_at_once_then_every_interval_until_the_deadline() -> None:
    now = [0.0]
    naps: list[float] = []

    def sleep(seconds: float) -> None:
        naps.append(seconds)
        now[0] += seconds

    checks = iter([False, False, True])
    poll(lambda: next(checks), 2.0, 120.0, sleep=sleep, clock=lambda: now[0])
    assert naps == [2.0, 2.0]
    naps.clear()
    with pytest.raises(VMExportError, match=r"^context deadline exceeded$"):
        poll(lambda: False, 2.0, 5.0, sleep=sleep, clock=lambda: now[0])
    assert naps == [2.0, 2.0, 1.0]


# Links.


def _export(volumes: list[dict[str, Any]], side: str = "external", **link: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "vme", "namespace": "ns"},
        "status": {"phase": "Ready", "links": {side: {"cert": "", "volumes": volumes, **link}}},
    }


def _volume(name: str, *formats: tuple[str, str]) -> dict[str, Any]:
    return {"name": name, "formats": [{"format": f, "url": u} for f, u in formats]}


def test_the_compressed_url_is_preferred_and_raw_is_the_fallback() -> None:
    info = VMExportInfo("download", "vme", volume_name="disk", decompress=True)
    raw, gz = ("raw", "https://h/raw"), ("gzip", "https://h/gz")
    assert volume_url(_export([_volume("disk", raw, raw, gz, raw)]), info) == ("https://h/gz", True)
    assert volume_url(_export([_volume("disk", raw)]), info) == ("https://h/raw", False)
    archive, directory = ("tar.gz", "https://h/tar"), ("dir", "https://h/dir/")
    assert volume_url(_export([_volume("disk", directory, archive)]), info) == ("https://h/tar", True)
    # As KubeVirt decides: the format looked at last, not the one picked, says whether it is raw already.
    assert volume_url(_export([_volume("disk", raw, directory)]), info) == ("https://h/raw", True)


def test_a_single_volume_is_taken_whatever_its_name_and_several_need_volume() -> None:
    only = _export([_volume("other", ("raw", "https://h/raw"))])
    assert volume_url(only, VMExportInfo("download", "vme", volume_name="disk"))[0] == "https://h/raw"
    two = _export([_volume("a", ("raw", "https://h/a")), _volume("b", ("raw", "https://h/b"))])
    assert volume_url(two, VMExportInfo("download", "vme", volume_name="b"))[0] == "https://h/b"
    with pytest.raises(VMExportError) as several:
        volume_url(two, VMExportInfo("download", "vme"))
    assert str(several.value) == (
        "detected more than one downloadable volume in 'ns/vme' VirtualMachineExport: "
        "Select the expected volume using the --volume flag"
    )
    with pytest.raises(
        VMExportError, match=r"^unable to get a valid URL from 'ns/vme' VirtualMachineExport$"
    ):
        volume_url(two, VMExportInfo("download", "vme", volume_name="c"))
    with pytest.raises(VMExportError, match=r"^unable to get a valid URL from"):
        volume_url(_export([_volume("disk", ("dir", "https://h/dir/"))]), VMExportInfo("download", "vme"))
    with pytest.raises(
        VMExportError, match=r"^unable to access the volume info from 'ns/vme' VirtualMachineExport$"
    ):
        volume_url(_export([]), VMExportInfo("download", "vme"))


def test_a_service_url_takes_the_internal_links_with_its_host() -> None:
    internal = _export(
        [_volume("disk", ("gzip", "https://virt-export-vme.ns.svc/volumes/disk/disk.img.gz"))], "internal"
    )
    info = VMExportInfo("download", "vme", service_url="127.0.0.1:5410")
    assert volume_url(internal, info)[0] == "https://127.0.0.1:5410/volumes/disk/disk.img.gz"
    # Without external links the internal ones are taken as they are.
    assert volume_url(internal, VMExportInfo("download", "vme"))[0] == (
        "https://virt-export-vme.ns.svc/volumes/disk/disk.img.gz"
    )
    assert with_service_host("https://user@h:1/p?q=1", "x:2") == "https://user@x:2/p?q=1"
    assert with_service_host("https://h/p", "") == "https://h/p"


def test_manifest_urls_come_from_the_side_in_use() -> None:
    manifests = [
        {"type": "all", "url": "https://svc/manifests/all"},
        {"type": "auth-header-secret", "url": "https://svc/s"},
    ]
    internal = _export([], "internal", manifests=manifests)
    assert manifest_urls(internal, VMExportInfo("download", "vme", service_url="127.0.0.1:1")) == {
        "all": "https://127.0.0.1:1/manifests/all",
        "auth-header-secret": "https://127.0.0.1:1/s",
    }
    with pytest.raises(
        VMExportError, match=r"^unable to access the manifest info from 'ns/vme' VirtualMachineExport$"
    ):
        manifest_urls(internal, VMExportInfo("download", "vme"))


# gzip.


def test_gunzip_reads_every_member_and_says_when_it_starts() -> None:
    body = gzip.compress(b"hello ") + gzip.compress(b"world\n")
    said: list[str] = []
    chunks = [body[i : i + 7] for i in range(0, len(body), 7)]
    assert b"".join(gunzip(chunks, lambda: said.append("decompressing"))) == b"hello world\n"
    assert said == ["decompressing"]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"not gzip at all", "gzip: invalid header"),
        (gzip.compress(b"data")[:-6], "unexpected EOF"),
        (gzip.compress(b"data")[:-4] + b"\0\0\0\0", "gzip: invalid checksum"),
        (gzip.compress(b"data") + b"trailing junk", "gzip: invalid header"),
        (b"", "EOF"),
    ],
)
def test_gunzip_errors_are_worded_as_go_words_them(body: bytes, message: str) -> None:
    with pytest.raises(VMExportError) as raised:
        b"".join(gunzip([body] if body else [], lambda: None))
    assert str(raised.value) == message


# Progress.


def test_sizes_are_shown_as_pb_shows_bytes() -> None:
    assert [format_bytes(n) for n in (0, 1023, 1024, 1536, 5 << 20, 3 << 30)] == [
        "0 B",
        "1023 B",
        "1.00 KiB",
        "1.50 KiB",
        "5.00 MiB",
        "3.00 GiB",
    ]


def test_the_progress_line_cycles_and_measures_speed_as_pb_does() -> None:
    written: list[str] = []
    now = [0.0]
    bar = ProgressBar(written.append, terminal=False, width=80, clock=lambda: now[0])
    bar.draw(finished=False)
    bar.add(1 << 20)
    now[0] = 0.2
    bar.draw(finished=False)  # too soon for a speed sample
    now[0] = 1.0
    bar.draw(finished=False)
    bar.add(1 << 20)
    now[0] = 2.0
    bar.draw(finished=True)  # the average over the whole download
    assert written == [
        "Downloading file: 0 B [___________________] ? p/s",
        "Downloading file: 1.00 MiB [==>________________] ? p/s",
        "Downloading file: 1.00 MiB [====>______________] 1.00 MiB p/s",
        "Downloading file: 2.00 MiB [======>____________] 1.00 MiB p/s",
    ]


def test_on_a_terminal_the_line_is_redrawn_in_place_and_ended_when_done() -> None:
    written: list[str] = []
    bar = ProgressBar(written.append, terminal=True, width=60, clock=lambda: 0.0)
    bar.draw(finished=False)
    bar.draw(finished=True)
    assert written[0] == "\r" + "Downloading file: 0 B [___________________] ? p/s".ljust(60)
    assert written[1].startswith("\rDownloading file: 0 B [==>")
    assert written[1].endswith("\n")


# Port-forward framing.


class FakeWebSocket:
    """Hands out queued messages, records what is sent."""

    def __init__(self, *messages: tuple[int, bytes]) -> None:
        self.messages = list(messages)
        self.sent: list[bytes] = []
        self.closed = self.shut = False

    def recv_data(self) -> tuple[int, bytes]:
        return self.messages.pop(0) if self.messages else (CLOSE, b"")

    def send_binary(self, payload: bytes) -> int:
        self.sent.append(payload)
        return len(payload)

    def send_close(self) -> None:
        self.closed = True

    def shutdown(self) -> None:
        self.shut = True


def _port(channel: int, port: int = 8443) -> tuple[int, bytes]:
    return BINARY, bytes([channel]) + struct.pack("<H", port)


def test_channel_bytes_and_port_prefixes_are_taken_off_what_arrives() -> None:
    errors: list[str] = []
    ws = FakeWebSocket(
        _port(0),
        _port(1),
        (BINARY, b"\x00HTTP/1.1 "),
        (BINARY, b"\x00"),  # nothing after the channel byte: nothing to hand out
        (BINARY, b"\x00200 OK"),
    )
    stream = ChannelStream(ws, 8443, errors.append)
    assert stream.recv_data() == (BINARY, b"HTTP/1.1 ")
    assert stream.recv_data() == (BINARY, b"200 OK")
    assert stream.recv_data() == (CLOSE, b"")
    assert errors == []


def test_a_port_prefix_may_come_in_pieces_or_with_data() -> None:
    prefix = struct.pack("<H", 8443)
    ws = FakeWebSocket((BINARY, b"\x00" + prefix[:1]), (BINARY, b"\x00" + prefix[1:] + b"data"))
    assert ChannelStream(ws, 8443, lambda _m: None).recv_data() == (BINARY, b"data")


def test_sends_go_out_on_the_data_channel_and_close_reaches_the_websocket() -> None:
    ws = FakeWebSocket()
    stream = ChannelStream(ws, 8443, lambda _m: None)
    stream.send_binary(b"GET / HTTP/1.1\r\n")
    stream.send_close()
    stream.shutdown()
    assert ws.sent == [b"\x00GET / HTTP/1.1\r\n"]
    assert (ws.closed, ws.shut) == (True, True)


def test_the_error_channel_is_reported_and_a_wrong_port_or_channel_ends_the_stream() -> None:
    errors: list[str] = []
    ws = FakeWebSocket(_port(0), _port(1), (BINARY, b"\x01error forwarding port 8443 to pod p: refused"))
    assert ChannelStream(ws, 8443, errors.append).recv_data() == (CLOSE, b"")
    assert errors == ["error forwarding port 8443 to pod p: refused"]
    with pytest.raises(OSError, match="unexpected port number in initial channel frame: 80"):
        ChannelStream(FakeWebSocket(_port(0, 80)), 8443, errors.append).recv_data()
    with pytest.raises(OSError, match="unexpected channel number: 5"):
        ChannelStream(FakeWebSocket((BINARY, b"\x05xyz")), 8443, errors.append).recv_data()


# Port lookup.


def _service(*ports: dict[str, Any], cluster_ip: str = "10.0.0.1") -> dict[str, Any]:
    return {"metadata": {"name": "virt-export-vme"}, "spec": {"clusterIP": cluster_ip, "ports": list(ports)}}


def test_the_service_port_resolves_to_the_pods_port_as_kubectl_resolves_it() -> None:
    pod = {
        "metadata": {"name": "p"},
        "spec": {"containers": [{"ports": [{"name": "export", "containerPort": 8443}]}]},
    }
    assert target_port(_service({"port": 443, "targetPort": 8443}), pod, 443) == 8443
    assert target_port(_service({"port": 443, "targetPort": "export"}), pod, 443) == 8443
    assert target_port(_service({"port": 443}), pod, 443) == 443
    assert target_port(_service({"port": 443, "targetPort": 8443}, cluster_ip="None"), pod, 443) == 443
    with pytest.raises(VMExportError, match=r"^Service virt-export-vme does not have a service port 443$"):
        target_port(_service({"port": 321, "targetPort": 8443}), pod, 443)
    with pytest.raises(VMExportError, match=r"^Pod 'p' does not have a named port 'web'$"):
        target_port(_service({"port": 443, "targetPort": "web"}), pod, 443)


def test_the_pod_selector_is_written_as_labels_sorted_by_key() -> None:
    assert selector_string({"b": "2", "a": "1"}) == "a=1,b=2"
    assert selector_string({}) == ""


def test_a_forwarded_connection_keeps_no_handshake_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    # The websocket is dialled with a timeout for its handshake; a forwarded download whose server pauses
    # longer than that must not be cut, so the stream waits without one afterwards.
    timeouts: list[float | None] = []
    asked: list[str] = []

    class Stream:
        def settimeout(self, timeout: float | None) -> None:
            timeouts.append(timeout)

    def dial(_connection: Any, url: str, _subprotocols: list[str]) -> Stream:
        asked.append(url)
        return Stream()

    class Connection:
        host = "https://apiserver:6443"

    monkeypatch.setattr(portforward, "dial", dial)
    portforward.pod_dialer(Connection(), "ns")("virt-export-x", 8443)  # type: ignore[arg-type]
    assert timeouts == [None]
    (url,) = asked
    assert url.endswith("/api/v1/namespaces/ns/pods/virt-export-x/portforward?ports=8443")
