"""``virtctl vmexport`` end to end: the command line against an in-memory Kubernetes API, downloads from a
local HTTPS server playing the export server (token header, TLS against the export's CA or insecure, raw
and gzip, manifests, retries), the export's lifecycle around a download, and ``--port-forward`` through a
local websocket server playing the API server's ``pods/portforward`` (v4.channel.k8s.io)."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import gzip
import string
import struct
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml
from aiohttp import WSMsgType, web
from click.testing import CliRunner, Result

from kubevirt.client import PODS, KubeClient
from kubevirt.client.resources import SECRETS, SERVICES, VIRTUAL_MACHINE_EXPORTS
from kubevirt.virtctl.clientconfig import ClientFlags
from kubevirt.virtctl.root import root
from kubevirt.virtctl.streams import StreamError
from kubevirt.virtctl.vmexport import command, download
from kubevirt_testing.app_thread import serving
from kubevirt_testing.certificates import CertificateAuthority, serving_context
from kubevirt_testing.fake_kube_api import FakeKubeApi

pytestmark = pytest.mark.timeout(60)

NAME = "test-vme"
NAMESPACE = "default"
TOKEN = "export-token-value"
SECRET = f"secret-{NAME}"
SERVICE = f"virt-export-{NAME}"
POD = f"virt-export-pod-{NAME}"
DISK = bytes(range(256)) * 64
YAML_MANIFEST = b"apiVersion: kubevirt.io/v1\nkind: VirtualMachine\n"
JSON_MANIFEST = b'{"apiVersion":"kubevirt.io/v1","kind":"VirtualMachine"}'
SECRET_MANIFEST = b"apiVersion: v1\nkind: Secret\n"


class ExportServer:
    """Serves the disk raw and gzipped (two gzip members) and the manifests, to the right token only."""

    def __init__(self, ca: CertificateAuthority, tmp_path: Path) -> None:
        self.requests: list[dict[str, Any]] = []
        self.failures = 0  # how many requests get a 500 first
        app = web.Application()
        app.router.add_get("/volumes/disk/disk.img", self._raw)
        app.router.add_get("/volumes/disk/disk.img.gz", self._gzip)
        app.router.add_get("/manifests/all", self._manifests)
        app.router.add_get("/manifests/secret", self._secret)
        self._serving = contextlib.ExitStack()
        self.port = self._serving.enter_context(
            serving(app, serving_context(ca.issue("virt-exportserver"), tmp_path))
        )
        self.base = f"https://127.0.0.1:{self.port}"

    def _refusal(self, request: web.Request) -> web.Response | None:
        self.requests.append({"path": request.path, "headers": dict(request.headers)})
        if request.headers.get("x-kubevirt-export-token") != TOKEN:
            return web.Response(status=401)
        if self.failures:
            self.failures -= 1
            return web.Response(status=500)
        return None

    async def _raw(self, request: web.Request) -> web.StreamResponse:
        return self._refusal(request) or web.Response(body=DISK)

    async def _gzip(self, request: web.Request) -> web.StreamResponse:
        half = len(DISK) // 2
        return self._refusal(request) or web.Response(
            body=gzip.compress(DISK[:half]) + gzip.compress(DISK[half:])
        )

    async def _manifests(self, request: web.Request) -> web.StreamResponse:
        json_wanted = request.headers.get("Accept") == "application/json"
        return self._refusal(request) or web.Response(body=JSON_MANIFEST if json_wanted else YAML_MANIFEST)

    async def _secret(self, request: web.Request) -> web.StreamResponse:
        return self._refusal(request) or web.Response(body=SECRET_MANIFEST)

    def stop(self) -> None:
        self._serving.close()


class PortForwardApi:
    """The API server's ``pods/<pod>/portforward`` over websockets, relaying to the export server."""

    def __init__(self, export_port: int) -> None:
        self.requests: list[dict[str, Any]] = []
        self._export_port = export_port
        app = web.Application()
        app.router.add_get("/api/v1/namespaces/{namespace}/pods/{pod}/portforward", self._forward)
        self._serving = contextlib.ExitStack()
        self.port = self._serving.enter_context(serving(app))

    async def _forward(self, request: web.Request) -> web.StreamResponse:
        self.requests.append(
            {
                "path": request.path_qs,
                "protocol": request.headers.get("Sec-WebSocket-Protocol"),
                "authorization": request.headers.get("Authorization"),
            }
        )
        port = int(request.query["ports"])
        ws = web.WebSocketResponse(protocols=("v4.channel.k8s.io",))
        await ws.prepare(request)
        prefix = struct.pack("<H", port)
        await ws.send_bytes(b"\x00" + prefix)
        await ws.send_bytes(b"\x01" + prefix)
        reader, writer = await asyncio.open_connection("127.0.0.1", self._export_port)

        async def to_client() -> None:
            while data := await reader.read(65536):
                await ws.send_bytes(b"\x00" + data)
            await ws.close()

        relay = asyncio.ensure_future(to_client())
        async for message in ws:
            if message.type == WSMsgType.BINARY:
                assert message.data[0] == 0, "a client writes on the data channel only"
                writer.write(message.data[1:])
                await writer.drain()
        relay.cancel()
        writer.close()
        return ws

    def stop(self) -> None:
        self._serving.close()


class ExportApi(FakeKubeApi):
    """The in-memory API; a new export comes out with ``status_on_create`` (the controller's work)."""

    def __init__(self, connection: Any = None) -> None:
        super().__init__()
        self.status_on_create: dict[str, Any] | None = None
        self.connection = connection

    def create(
        self, resource: Any, namespace: str | None, body: Mapping[str, Any], *, dry_run: bool = False
    ) -> Any:
        if resource == VIRTUAL_MACHINE_EXPORTS and self.status_on_create is not None:
            body = {**body, "status": self.status_on_create}
        return super().create(resource, namespace, body, dry_run=dry_run)


@pytest.fixture
def ca() -> CertificateAuthority:
    return CertificateAuthority.create("export-ca")


@pytest.fixture
def server(ca: CertificateAuthority, tmp_path: Path) -> Iterator[ExportServer]:
    export_server = ExportServer(ca, tmp_path)
    yield export_server
    export_server.stop()


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch) -> ExportApi:
    fake = ExportApi()
    connected: list[ClientFlags] = []

    def connect(flags: ClientFlags) -> tuple[ExportApi, str]:
        connected.append(flags)
        return fake, flags.namespace or NAMESPACE

    monkeypatch.setattr(command, "connect", connect)
    monkeypatch.setattr(download, "pause", lambda _seconds: None)
    return fake


def run(*args: str) -> Result:
    return CliRunner().invoke(root, ["vmexport", *args])


def status(
    server: ExportServer, *formats: str, cert: str = "", side: str = "external", manifests: bool = False
) -> dict[str, Any]:
    paths = {"raw": "/volumes/disk/disk.img", "gzip": "/volumes/disk/disk.img.gz"}
    link: dict[str, Any] = {
        "cert": cert,
        "volumes": [
            {"name": "disk", "formats": [{"format": f, "url": server.base + paths[f]} for f in formats]}
        ],
    }
    if manifests:
        link["manifests"] = [
            {"type": "all", "url": f"{server.base}/manifests/all"},
            {"type": "auth-header-secret", "url": f"{server.base}/manifests/secret"},
        ]
    return {"phase": "Ready", "links": {side: link}, "tokenSecretRef": SECRET, "serviceName": SERVICE}


def add_export(api: ExportApi, export_status: dict[str, Any] | None, namespace: str = NAMESPACE) -> None:
    spec = {
        "source": {"apiGroup": "", "kind": "PersistentVolumeClaim", "name": "claim"},
        "tokenSecretRef": SECRET,
    }
    body: dict[str, Any] = {"metadata": {"name": NAME, "namespace": namespace}, "spec": spec}
    if export_status is not None:
        body["status"] = export_status
    api.add(VIRTUAL_MACHINE_EXPORTS, body)


def add_token(api: ExportApi, namespace: str = NAMESPACE) -> None:
    data = {"token": base64.b64encode(TOKEN.encode()).decode()}
    api.add(SECRETS, {"metadata": {"name": SECRET, "namespace": namespace}, "data": data})


def exists(api: ExportApi, namespace: str = NAMESPACE) -> bool:
    return (VIRTUAL_MACHINE_EXPORTS.plural, namespace, NAME) in api.objects


# create and delete.


@pytest.mark.parametrize(
    ("flag", "source"),
    [
        ("--pvc", {"apiGroup": "", "kind": "PersistentVolumeClaim", "name": "src"}),
        ("--snapshot", {"apiGroup": "snapshot.kubevirt.io", "kind": "VirtualMachineSnapshot", "name": "src"}),
        ("--vm", {"apiGroup": "kubevirt.io", "kind": "VirtualMachine", "name": "src"}),
    ],
)
def test_create_writes_the_export_and_its_token_secret(
    api: ExportApi, flag: str, source: dict[str, str]
) -> None:
    result = run(
        "create", NAME, f"{flag}=src", "--ttl=2m", "--labels=l1=v1,l2=v2", "--annotations", "a=b", "-n", "ns"
    )
    assert result.exit_code == 0, result.output
    assert result.stderr == f"VirtualMachineExport 'ns/{NAME}' created succesfully\n"
    assert result.stdout == ""
    export = api.get(VIRTUAL_MACHINE_EXPORTS, "ns", NAME)
    assert export["spec"] == {"tokenSecretRef": SECRET, "source": source, "ttlDuration": "2m0s"}
    assert export["metadata"]["labels"] == {"l1": "v1", "l2": "v2"}
    assert export["metadata"]["annotations"] == {"a": "b"}
    secret = api.get(SECRETS, "ns", SECRET)
    assert secret["type"] == "Opaque"
    assert secret["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "export.kubevirt.io/v1beta1",
            "kind": "VirtualMachineExport",
            "name": NAME,
            "uid": export["metadata"]["uid"],
            "controller": True,
            "blockOwnerDeletion": False,
        }
    ]
    token = base64.b64decode(secret["data"]["token"]).decode()
    assert len(token) == 20
    assert set(token) <= set(string.ascii_letters + string.digits)


def test_create_refuses_an_existing_export(api: ExportApi) -> None:
    add_export(api, None)
    result = run("create", NAME, "--pvc=claim")
    assert result.exit_code == 1
    assert result.stderr == f"VirtualMachineExport 'default/{NAME}' already exists\n"


def test_delete_removes_the_export_and_accepts_one_that_is_gone(api: ExportApi) -> None:
    add_export(api, None)
    deleted = run("delete", NAME)
    assert deleted.exit_code == 0, deleted.output
    assert deleted.stderr == f"VirtualMachineExport 'default/{NAME}' deleted succesfully\n"
    assert not exists(api)
    again = run("delete", NAME)
    assert again.exit_code == 0
    assert again.stderr == f"VirtualMachineExport 'default/{NAME}' does not exist\n"


def test_bad_flags_fail_before_any_request(api: ExportApi) -> None:
    result = run("delete", NAME, "--insecure")
    assert (result.exit_code, result.stderr) == (1, "the '--insecure' flag is incompatible with 'delete'\n")
    result = run("download", NAME, "--vm=a", "--pvc=b", "--output=x")
    assert result.exit_code == 1
    assert "if any flags in the group [vm snapshot pvc]" in result.stderr
    assert api.writes == []


# download.


def test_a_raw_volume_is_downloaded_with_the_token(
    api: ExportApi, server: ExportServer, tmp_path: Path
) -> None:
    add_export(api, status(server, "raw"))
    add_token(api)
    output = tmp_path / "disk.img"
    result = run("download", NAME, "--volume=disk", f"--output={output}", "--insecure", "--format=raw")
    assert result.exit_code == 0, result.output
    assert output.read_bytes() == DISK
    assert [r["path"] for r in server.requests] == ["/volumes/disk/disk.img"]
    assert result.stdout == "Download finished succesfully\n"  # no decompression: the link is raw already
    assert result.stderr.startswith("Downloading file: ")
    assert "16.00 KiB [" in result.stderr
    assert exists(api)  # it was there before: kept


def test_gzip_is_kept_by_default_and_decompressed_with_format_raw(
    api: ExportApi, server: ExportServer, tmp_path: Path
) -> None:
    add_export(api, status(server, "raw", "gzip"))
    add_token(api)
    compressed = tmp_path / "disk.img.gz"
    result = run("download", NAME, f"--output={compressed}", "--insecure")
    assert result.exit_code == 0, result.output
    assert server.requests[-1]["path"] == "/volumes/disk/disk.img.gz"
    assert gzip.decompress(compressed.read_bytes()) == DISK
    raw = tmp_path / "disk.img"
    result = run("download", NAME, f"--output={raw}", "--insecure", "--format=raw")
    assert result.exit_code == 0, result.output
    assert raw.read_bytes() == DISK
    assert result.stdout == "Decompressing image:\nDownload finished succesfully\n"


def test_the_server_is_checked_against_the_exports_ca(
    api: ExportApi, server: ExportServer, ca: CertificateAuthority, tmp_path: Path
) -> None:
    add_export(api, status(server, "raw", cert=ca.pair.cert_pem.decode()))
    add_token(api)
    output = tmp_path / "disk.img"
    result = run("download", NAME, f"--output={output}")
    assert result.exit_code == 0, result.output
    assert output.read_bytes() == DISK


def test_a_server_the_ca_does_not_vouch_for_is_refused_unless_insecure(
    api: ExportApi, server: ExportServer, tmp_path: Path
) -> None:
    stranger = CertificateAuthority.create("someone-else")
    add_export(api, status(server, "raw", cert=stranger.pair.cert_pem.decode()))
    add_token(api)
    output = tmp_path / "disk.img"
    refused = run("download", NAME, f"--output={output}")
    assert refused.exit_code == 1
    assert refused.stderr.startswith(f'Get "{server.base}/volumes/disk/disk.img": ')
    assert "CERTIFICATE_VERIFY_FAILED" in refused.stderr
    assert output.read_bytes() == b""  # created before the download, as KubeVirt's
    accepted = run("download", NAME, f"--output={output}", "--insecure")
    assert accepted.exit_code == 0, accepted.output
    assert output.read_bytes() == DISK


def test_to_stdout_the_volume_goes_alone_and_messages_go_to_stderr(
    api: ExportApi, server: ExportServer
) -> None:
    add_export(api, status(server, "raw"))
    add_token(api)
    result = run("download", NAME, "--output", "-", "--insecure")
    assert result.exit_code == 0, result.output
    assert result.stdout_bytes == DISK
    assert result.stderr.endswith("Download finished succesfully\n")


@pytest.mark.parametrize(
    ("flags", "kept"),
    [((), False), (("--keep-vme",), True)],
)
def test_an_export_made_for_the_download_goes_after_it_unless_kept(
    api: ExportApi, server: ExportServer, tmp_path: Path, flags: tuple[str, ...], kept: bool
) -> None:
    api.status_on_create = status(server, "gzip")
    add_token(api)  # the controller's secret is named by status.tokenSecretRef
    output = tmp_path / "disk.img"
    result = run("download", NAME, "--pvc=claim", f"--output={output}", "--insecure", "--format=raw", *flags)
    assert result.exit_code == 0, result.output
    assert output.read_bytes() == DISK
    assert exists(api) == kept
    assert result.stdout.startswith(f"VirtualMachineExport 'default/{NAME}' created succesfully\n")
    assert result.stdout.endswith(
        "" if kept else f"VirtualMachineExport 'default/{NAME}' deleted succesfully\n"
    )


def test_an_existing_export_is_kept_unless_delete_vme(
    api: ExportApi, server: ExportServer, tmp_path: Path
) -> None:
    add_export(api, status(server, "raw"))
    add_token(api)
    output = tmp_path / "disk.img"
    kept = run("download", NAME, "--pvc=claim", f"--output={output}", "--insecure")
    assert kept.exit_code == 0, kept.output
    assert exists(api)
    deleted = run("download", NAME, f"--output={output}", "--insecure", "--delete-vme")
    assert deleted.exit_code == 0, deleted.output
    assert not exists(api)


def test_bad_statuses_are_retried_then_given_up(api: ExportApi, server: ExportServer, tmp_path: Path) -> None:
    add_export(api, status(server, "raw"))
    add_token(api)
    output = tmp_path / "disk.img"
    server.failures = 1
    recovered = run("download", NAME, f"--output={output}", "--insecure", "--retry=2")
    assert recovered.exit_code == 0, recovered.output
    assert recovered.stdout == (
        "Bad status: 500 Internal Server Error\nRetrying...\nDownload finished succesfully\n"
    )
    assert output.read_bytes() == DISK
    server.failures = 3
    failed = run("download", NAME, f"--output={output}", "--insecure", "--retry", "2")
    assert failed.exit_code == 1
    assert failed.stdout.count("Bad status: 500 Internal Server Error\n") == 3
    assert failed.stdout.count("Retrying...\n") == 2
    assert failed.stderr.endswith("retry count reached, exiting unsuccesfully\n")


def test_the_download_waits_for_readiness_no_longer_than_asked(api: ExportApi, tmp_path: Path) -> None:
    add_export(api, {"phase": "Pending"})
    result = run("download", NAME, f"--output={tmp_path / 'x'}", "--readiness-timeout=1ns")
    assert result.exit_code == 1
    assert result.stdout == f"waiting for VM Export {NAME} status to be ready...\n"
    assert result.stderr == "context deadline exceeded\n"


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        ("no-export", f"unable to get 'default/{NAME}' VirtualMachineExport"),
        ("no-secret", f'secrets "{SECRET}" not found'),
        ("no-volumes", f"unable to access the volume info from 'default/{NAME}' VirtualMachineExport"),
    ],
)
def test_download_failures_are_worded_as_kubevirts(
    api: ExportApi,
    server: ExportServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    setup: str,
    message: str,
) -> None:
    if setup == "no-export":
        monkeypatch.setattr(download, "wait_until_ready", lambda *_args, **_kwargs: None)
    else:
        export_status = status(server, "raw")
        if setup == "no-volumes":
            export_status["links"]["external"]["volumes"] = []
        add_export(api, export_status)
    result = run("download", NAME, f"--output={tmp_path / 'x'}", "--insecure")
    assert result.exit_code == 1
    assert result.stderr.splitlines()[-1] == message


# Manifests.


@pytest.mark.parametrize(
    ("flags", "accept", "body"),
    [
        ((), "application/yaml", YAML_MANIFEST),
        (("--manifest-output-format=json",), "application/json", JSON_MANIFEST),
        (("--manifest-output-format=YAML",), "application/yaml", YAML_MANIFEST),
    ],
)
def test_the_manifest_is_printed_as_asked(
    api: ExportApi, server: ExportServer, flags: tuple[str, ...], accept: str, body: bytes
) -> None:
    api.status_on_create = status(server, "gzip", manifests=True)
    add_token(api)
    result = run("download", NAME, "--manifest", "--vm=vm", "--insecure", *flags)
    assert result.exit_code == 0, result.output
    assert result.stdout_bytes == body
    assert [(r["path"], r["headers"]["Accept"]) for r in server.requests] == [("/manifests/all", accept)]
    assert exists(api)  # a manifest never deletes the export


def test_include_secret_adds_the_cdi_header_secret(
    api: ExportApi, server: ExportServer, tmp_path: Path
) -> None:
    add_export(api, status(server, "gzip", manifests=True))
    add_token(api)
    output = tmp_path / "vm.yaml"
    result = run("download", NAME, "--manifest", "--include-secret", "--insecure", f"--output={output}")
    assert result.exit_code == 0, result.output
    assert output.read_bytes() == YAML_MANIFEST + SECRET_MANIFEST
    assert [r["path"] for r in server.requests] == ["/manifests/all", "/manifests/secret"]


def test_a_manifest_refused_by_the_server_is_retried_then_given_up(
    api: ExportApi, server: ExportServer
) -> None:
    add_export(api, status(server, "gzip", manifests=True))
    add_token(api)
    server.failures = 5
    result = run("download", NAME, "--manifest", "--insecure")
    assert result.exit_code == 1
    assert (
        result.stderr == "Bad status: 500 Internal Server Error\nretry count reached, exiting unsuccesfully\n"
    )


# Port-forward.


@pytest.fixture
def forward_api(server: ExportServer) -> Iterator[PortForwardApi]:
    api_server = PortForwardApi(server.port)
    yield api_server
    api_server.stop()


@pytest.fixture
def pf_api(api: ExportApi, server: ExportServer, forward_api: PortForwardApi, tmp_path: Path) -> ExportApi:
    """An export with only internal links (named after the service), its service and its pod."""
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": f"http://127.0.0.1:{forward_api.port}"}}],
        "users": [{"name": "u", "user": {"token": "api-token"}}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "x",
    }
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(yaml.safe_dump(config))
    api.connection = KubeClient.from_kubeconfig(str(kubeconfig)).connection
    internal = status(server, "raw", "gzip", side="internal")
    for volume_format in internal["links"]["internal"]["volumes"][0]["formats"]:
        volume_format["url"] = volume_format["url"].replace(server.base, f"https://{SERVICE}.{NAMESPACE}.svc")
    add_export(api, internal)
    add_token(api)
    selector = {"kubevirt.io.virt-export-service": NAME}
    service_spec = {"selector": selector, "ports": [{"name": "export", "port": 443, "targetPort": 8443}]}
    api.add(SERVICES, {"metadata": {"name": SERVICE, "namespace": NAMESPACE}, "spec": service_spec})
    api.add(PODS, {"metadata": {"name": "unrelated", "namespace": NAMESPACE, "labels": {"app": "x"}}})
    api.add(PODS, {"metadata": {"name": POD, "namespace": NAMESPACE, "labels": selector}})
    return api


def test_port_forward_downloads_through_the_pods_portforward_subresource(
    pf_api: ExportApi, forward_api: PortForwardApi, tmp_path: Path
) -> None:
    output = tmp_path / "disk.img"
    result = run("download", NAME, "--port-forward", f"--output={output}", "--format=raw")
    assert result.exit_code == 0, result.output
    assert output.read_bytes() == DISK
    assert result.stdout == (
        f"service {SERVICE} is ready for port-forwarding\n"
        "Port forwarding is ready.\n"
        "Decompressing image:\n"
        "Download finished succesfully\n"
    )
    assert "Forwarding from 127.0.0.1:" in result.stderr
    assert " -> 8443\n" in result.stderr
    assert "Handling connection for " in result.stderr
    assert forward_api.requests == [
        {
            "path": f"/api/v1/namespaces/{NAMESPACE}/pods/{POD}/portforward?ports=8443",
            "protocol": "v4.channel.k8s.io",
            "authorization": "Bearer api-token",
        }
    ]


def test_port_forward_waits_for_the_service_and_needs_its_port_and_a_pod(
    pf_api: ExportApi, tmp_path: Path
) -> None:
    output = f"--output={tmp_path / 'disk.img'}"
    service = pf_api.get(SERVICES, NAMESPACE, SERVICE)
    service["spec"]["ports"][0]["port"] = 321
    pf_api.update(SERVICES, NAMESPACE, service)
    result = run("download", NAME, "--port-forward", output)
    assert (result.exit_code, result.stderr) == (1, f"Service {SERVICE} does not have a service port 443\n")
    pf_api.delete(PODS, NAMESPACE, POD)
    result = run("download", NAME, "--port-forward", "--local-port=5432", output)
    assert (result.exit_code, result.stderr) == (1, f"no pods found for the service {SERVICE}\n")
    pf_api.delete(SERVICES, NAMESPACE, SERVICE)
    result = run("download", NAME, "--port-forward", output, "--readiness-timeout=1ns")
    assert result.exit_code == 1
    assert result.stdout == f"waiting for service {SERVICE} to be ready before port-forwarding...\n"
    assert result.stderr == "context deadline exceeded\n"


def test_unset_ttl_labels_and_annotations_are_left_out_of_the_export(api: ExportApi) -> None:
    result = run("create", NAME, "--vm=vm", "--labels=novalue")
    assert result.exit_code == 0, result.output
    export = api.get(VIRTUAL_MACHINE_EXPORTS, NAMESPACE, NAME)
    assert set(export["spec"]) == {"tokenSecretRef", "source"}
    assert "labels" not in export["metadata"]
    assert "annotations" not in export["metadata"]


def test_a_refused_port_forward_is_reported_and_the_download_fails(
    pf_api: ExportApi, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(_pod: str, _port: int) -> Any:
        raise StreamError('pods "virt-export-pod-test-vme" is forbidden')

    monkeypatch.setattr(command, "pod_dialer", lambda _connection, _namespace: refuse)
    result = run("download", NAME, "--port-forward", f"--output={tmp_path / 'disk.img'}")
    assert result.exit_code == 1
    assert ': error upgrading connection: pods "virt-export-pod-test-vme" is forbidden\n' in result.stderr, (
        result.stderr
    )
    # The connection is dropped: reset or closed, depending on how far the TLS handshake got.
    assert result.stderr.splitlines()[-1].startswith('Get "https://127.0.0.1:')
