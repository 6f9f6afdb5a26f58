"""``virtctl image-upload`` end to end: the command line against an in-memory Kubernetes API playing CDI's
controllers (the claim's upload server gets ready, the DataVolume reaches ``UploadReady``, the token API
answers), and a local aiohttp HTTPS server playing the upload proxy, recording the bytes and the token."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from click.testing import CliRunner, Result

from kubevirt.client import EVENTS, PERSISTENT_VOLUME_CLAIMS
from kubevirt.client.resources import CDI_CONFIGS, DATA_SOURCES, DATA_VOLUMES, Resource
from kubevirt.virtctl.clientconfig import ClientFlags
from kubevirt.virtctl.imageupload import command
from kubevirt.virtctl.imageupload.objects import UPLOAD_TOKEN_REQUESTS
from kubevirt.virtctl.root import root
from kubevirt_testing.app_thread import serving
from kubevirt_testing.certificates import CertificateAuthority, serving_context
from kubevirt_testing.fake_kube_api import FakeKubeApi

pytestmark = pytest.mark.timeout(60)

NAME = "test-volume"
NAMESPACE = "default"
TOKEN = "upload-token-value"
DISK = bytes(range(256)) * 300
UPLOAD_TARGET = "cdi.kubevirt.io/storage.upload.target"
POD_PHASE = "cdi.kubevirt.io/storage.pod.phase"
POD_READY = "cdi.kubevirt.io/storage.pod.ready"
CONTENT_TYPE = "cdi.kubevirt.io/storage.contentType"


class CdiApi(FakeKubeApi):
    """The API with CDI's controllers reduced to their effect: a new claim's upload server is ready on
    the second look, a new DataVolume gets its claim and reaches ``UploadReady`` on the second look."""

    def __init__(self) -> None:
        super().__init__()
        self.token_requests: list[dict[str, Any]] = []
        self._not_ready_yet: set[tuple[str, str]] = set()
        self._adding = False

    def add(self, resource: Resource, obj: Mapping[str, Any]) -> Any:
        """A test's own object: no controller acts on it."""
        self._adding = True
        try:
            return super().add(resource, obj)
        finally:
            self._adding = False

    def create(
        self, resource: Resource, namespace: str | None, body: Mapping[str, Any], *, dry_run: bool = False
    ) -> Any:
        if resource == UPLOAD_TOKEN_REQUESTS:
            self.token_requests.append(dict(body))
            return {**body, "status": {"token": TOKEN}}
        created = super().create(resource, namespace, body, dry_run=dry_run)
        if self._adding:
            return created
        if resource == PERSISTENT_VOLUME_CLAIMS:
            self._not_ready_yet.add((resource.plural, created["metadata"]["name"]))
        if resource == DATA_VOLUMES:
            annotations = {UPLOAD_TARGET: "", CONTENT_TYPE: created["spec"]["contentType"]}
            self.add(PERSISTENT_VOLUME_CLAIMS, claim(annotations))
            self._not_ready_yet.add((resource.plural, created["metadata"]["name"]))
        return created

    def get(self, resource: Resource, namespace: str | None, name: str) -> Any:
        found = super().get(resource, namespace, name)
        key = (resource.plural, name)
        if key in self._not_ready_yet:
            self._not_ready_yet.discard(key)
            self._make_ready(resource, found)
        return found

    def _make_ready(self, resource: Resource, obj: dict[str, Any]) -> None:
        """For the next look: what the controller would have written by then."""
        with self._lock:
            stored = self.objects[
                (resource.plural, obj["metadata"].get("namespace"), obj["metadata"]["name"])
            ]
            if resource == DATA_VOLUMES:
                stored["status"] = {"phase": "UploadReady", "claimName": NAME}
            else:
                stored["metadata"].setdefault("annotations", {}).update(
                    {POD_PHASE: "Running", POD_READY: "true"}
                )

    def set_pod_phase(self, phase: str) -> None:
        with self._lock:
            stored = self.objects.get((PERSISTENT_VOLUME_CLAIMS.plural, NAMESPACE, NAME))
            if stored is not None:
                stored["metadata"].setdefault("annotations", {})[POD_PHASE] = phase


def claim(annotations: dict[str, str] | None = None, **extra: Any) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": NAME, "namespace": NAMESPACE}
    if annotations is not None:
        metadata["annotations"] = annotations
    return {"metadata": metadata, "spec": {"resources": {"requests": {"storage": "500Mi"}}}, **extra}


READY = {UPLOAD_TARGET: "", POD_PHASE: "Running", POD_READY: "true"}


def upload_data_volume(phase: str, annotations: dict[str, str] | None = None) -> dict[str, Any]:
    """An existing upload DataVolume in ``phase``."""
    metadata: dict[str, Any] = {"name": NAME, "namespace": NAMESPACE}
    if annotations is not None:
        metadata["annotations"] = annotations
    return {"metadata": metadata, "spec": {"source": {"upload": {}}}, "status": {"phase": phase}}


POPULATOR = {"cdi.kubevirt.io/storage.usePopulator": "true"}


class UploadProxy:
    """CDI's upload proxy: HEAD on the async path (200 when ``async_``), POSTs recorded; a success marks
    the claim's upload pod ``Succeeded`` (the processing that follows)."""

    def __init__(self, api: CdiApi, ca: CertificateAuthority, tmp_path: Path) -> None:
        self.api = api
        self.async_ = True
        self.failures = 0
        self.heads: list[dict[str, Any]] = []
        self.posts: list[dict[str, Any]] = []
        app = web.Application(client_max_size=len(DISK) * 2)
        for path in ("/v1beta1/upload-async", "/v1beta1/upload"):
            app.router.add_post(path, self._post)
        app.router.add_route("HEAD", "/v1beta1/upload-async", self._head)
        self._serving = contextlib.ExitStack()
        port = self._serving.enter_context(
            serving(app, serving_context(ca.issue("cdi-uploadproxy"), tmp_path))
        )
        self.url = f"https://127.0.0.1:{port}"

    async def _head(self, request: web.Request) -> web.Response:
        self.heads.append({"path": request.path, "authorization": request.headers.get("Authorization")})
        return web.Response(status=200 if self.async_ else 404)

    async def _post(self, request: web.Request) -> web.Response:
        body = await request.read()
        self.posts.append(
            {
                "path": request.path,
                "authorization": request.headers.get("Authorization"),
                "content_type": request.headers.get("Content-Type"),
                "content_length": request.headers.get("Content-Length"),
                "body": body,
            }
        )
        if self.failures:
            self.failures -= 1
            return web.Response(status=502, text="bad gateway")
        self.api.set_pod_phase("Succeeded")
        return web.Response(status=200)

    def stop(self) -> None:
        self._serving.close()


@pytest.fixture
def ca() -> CertificateAuthority:
    return CertificateAuthority.create("uploadproxy-ca")


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch) -> CdiApi:
    fake = CdiApi()

    def connect(flags: ClientFlags) -> tuple[CdiApi, str]:
        return fake, flags.namespace or NAMESPACE

    monkeypatch.setattr(command, "connect", connect)
    monkeypatch.setattr(command, "pause", lambda _seconds: None)
    return fake


@pytest.fixture
def proxy(api: CdiApi, ca: CertificateAuthority, tmp_path: Path) -> Iterator[UploadProxy]:
    server = UploadProxy(api, ca, tmp_path)
    api.add(
        CDI_CONFIGS, {"metadata": {"name": "config"}, "spec": {}, "status": {"uploadProxyURL": server.url}}
    )
    yield server
    server.stop()


@pytest.fixture
def image(tmp_path: Path) -> Path:
    path = tmp_path / "disk.qcow2"
    path.write_bytes(DISK)
    return path


def run(*args: str) -> Result:
    return CliRunner().invoke(root, ["image-upload", *args])


def without_progress(stdout: str) -> str:
    """stdout with the progress drawings (after the blank line that precedes them) cut out."""
    head, _, rest = stdout.partition("\n\n")
    return head + "\n<progress>\n" + rest[rest.index("Uploading data completed") :]


def test_a_new_data_volume_gets_the_image(api: CdiApi, proxy: UploadProxy, image: Path) -> None:
    result = run("dv", NAME, "--size=500Mi", f"--image-path={image}", "--insecure")
    assert result.exit_code == 0, result.output
    assert result.stderr == ""
    assert without_progress(result.stdout) == (
        f"PVC {NAMESPACE}/{NAME} not found \n"
        f"DataVolume {NAMESPACE}/{NAME} created\n"
        f"Waiting for PVC {NAME} upload pod to be ready...\n"
        "Pod now ready\n"
        f"Uploading data to {proxy.url}\n"
        "<progress>\n"
        "Uploading data completed successfully, waiting for processing to complete, "
        "you can hit ctrl-c without interrupting the progress\n"
        "Processing completed successfully\n"
        f"Uploading {image} completed successfully\n"
    )
    assert "\n\n75.00 KiB / 75.00 KiB [" in result.stdout
    dv = api.get(DATA_VOLUMES, NAMESPACE, NAME)
    assert dv["spec"] == {
        "source": {"upload": {}},
        "contentType": "kubevirt",
        "storage": {"resources": {"requests": {"storage": "500Mi"}}},
    }
    assert api.token_requests == [
        {
            "apiVersion": "upload.cdi.kubevirt.io/v1beta1",
            "kind": "UploadTokenRequest",
            "metadata": {"name": "token-for-virtctl"},
            "spec": {"pvcName": NAME},
        }
    ]
    assert proxy.heads == [{"path": "/v1beta1/upload-async", "authorization": f"Bearer {TOKEN}"}]
    [post] = proxy.posts
    assert post == {
        "path": "/v1beta1/upload-async",
        "authorization": f"Bearer {TOKEN}",
        "content_type": "application/octet-stream",
        "content_length": str(len(DISK)),
        "body": DISK,
    }


def test_a_new_pvc_through_the_synchronous_path(api: CdiApi, proxy: UploadProxy, image: Path) -> None:
    proxy.async_ = False
    result = run(
        "pvc", NAME, "--size=1Gi", f"--archive-path={image}", f"--uploadproxy-url={proxy.url}", "--insecure"
    )
    assert result.exit_code == 0, result.output
    assert f"PersistentVolumeClaim {NAMESPACE}/{NAME} created\n" in result.stdout
    assert f"Waiting for PVC {NAME} upload pod to be ready...\nPod now ready\n" in result.stdout
    pvc = api.get(PERSISTENT_VOLUME_CLAIMS, NAMESPACE, NAME)
    assert pvc["metadata"]["annotations"][CONTENT_TYPE] == "archive"
    assert pvc["metadata"]["labels"] == {"cdi.kubevirt.io/applyStorageProfile": "true"}
    assert pvc["spec"]["accessModes"] == ["ReadWriteOnce"]
    assert [p["path"] for p in proxy.posts] == ["/v1beta1/upload"]
    assert proxy.posts[0]["body"] == DISK


def test_the_deprecated_flags_still_work_and_say_so(api: CdiApi, proxy: UploadProxy, image: Path) -> None:
    result = run(f"--pvc-name={NAME}", "--pvc-size=1Gi", f"--image-path={image}", "--insecure")
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith(
        "Flag --pvc-name has been deprecated, specify the name as the second argument instead.\n"
        "Flag --pvc-size has been deprecated, use --size instead.\n"
    )
    assert f"PersistentVolumeClaim {NAMESPACE}/{NAME} created\n" in result.stdout


def test_an_existing_pvc_is_marked_for_upload(api: CdiApi, proxy: UploadProxy, image: Path) -> None:
    api.add(PERSISTENT_VOLUME_CLAIMS, claim({POD_READY: "true"}))
    result = run("pvc", NAME, "--no-create", f"--image-path={image}", "--insecure")
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith(f"Using existing PVC {NAMESPACE}/{NAME}\nUploading data to {proxy.url}\n")
    annotations = api.get(PERSISTENT_VOLUME_CLAIMS, NAMESPACE, NAME)["metadata"]["annotations"]
    assert annotations[UPLOAD_TARGET] == ""
    assert ("update", "persistentvolumeclaims", NAMESPACE, NAME) in api.writes


def test_transient_failures_are_retried(api: CdiApi, proxy: UploadProxy, image: Path) -> None:
    proxy.failures = 2
    result = run("dv", NAME, "--size=1Gi", f"--image-path={image}", "--insecure")
    assert result.exit_code == 0, result.output
    assert len(proxy.posts) == 3
    assert all(post["body"] == DISK for post in proxy.posts)


def test_giving_up_after_the_retries(api: CdiApi, proxy: UploadProxy, image: Path) -> None:
    proxy.failures = 5
    result = run("dv", NAME, "--size=1Gi", f"--image-path={image}", "--insecure", "--retry=2")
    assert result.exit_code == 1
    assert (
        result.stderr == "error uploading image after 2 retries: unexpected return value 502, bad gateway\n"
    )
    assert len(proxy.posts) == 2
    assert "Traceback" not in result.output


def test_the_proxy_is_verified_unless_insecure(
    api: CdiApi, proxy: UploadProxy, image: Path, ca: CertificateAuthority, tmp_path: Path, monkeypatch: Any
) -> None:
    result = run("dv", NAME, "--size=1Gi", f"--image-path={image}", "--retry=1")
    assert result.exit_code == 1
    assert result.stderr.startswith(
        f'error uploading image after 1 retries: Post "{proxy.url}/v1beta1/upload": '
    )
    assert "CERTIFICATE_VERIFY_FAILED" in result.stderr
    assert proxy.posts == []
    # Trusted through the system's roots (SSL_CERT_FILE, as Go's client honours it too).
    bundle = tmp_path / "ca.pem"
    bundle.write_bytes(ca.pair.cert_pem)
    monkeypatch.setenv("SSL_CERT_FILE", str(bundle))
    api.delete(DATA_VOLUMES, NAMESPACE, NAME)
    api.delete(PERSISTENT_VOLUME_CLAIMS, NAMESPACE, NAME)
    result = run("dv", NAME, "--size=1Gi", f"--image-path={image}")
    assert result.exit_code == 0, result.output
    assert proxy.posts[-1]["body"] == DISK


def test_datasource_is_created_with_the_default_instancetype(
    api: CdiApi, proxy: UploadProxy, image: Path
) -> None:
    result = run(
        "dv",
        NAME,
        "--size=1Gi",
        f"--image-path={image}",
        "--insecure",
        "--datasource",
        "--default-instancetype=fake.large",
        "--default-preference=fake.centos",
    )
    assert result.exit_code == 0, result.output
    assert f"Created a new DataSource {NAMESPACE}/{NAME}\n" in result.stdout
    source = api.get(DATA_SOURCES, NAMESPACE, NAME)
    assert source["spec"] == {"source": {"pvc": {"name": NAME, "namespace": NAMESPACE}}}
    assert source["metadata"]["labels"] == {
        "instancetype.kubevirt.io/default-instancetype": "fake.large",
        "instancetype.kubevirt.io/default-preference": "fake.centos",
    }
    assert api.get(DATA_VOLUMES, NAMESPACE, NAME)["metadata"]["labels"] == source["metadata"]["labels"]


def test_an_existing_datasource_is_repointed(api: CdiApi, proxy: UploadProxy, image: Path) -> None:
    api.add(
        DATA_SOURCES,
        {
            "metadata": {"name": NAME, "namespace": NAMESPACE, "labels": {"a": "b"}},
            "spec": {"source": {"pvc": {"name": "", "namespace": ""}}},
        },
    )
    result = run("dv", NAME, "--size=1Gi", f"--image-path={image}", "--insecure", "--datasource")
    assert result.exit_code == 0, result.output
    assert f"Updated an existing DataSource {NAMESPACE}/{NAME}\n" in result.stdout
    assert api.get(DATA_SOURCES, NAMESPACE, NAME)["spec"]["source"]["pvc"] == {
        "name": NAME,
        "namespace": NAMESPACE,
    }


def test_processing_that_cannot_be_followed_is_reported(api: CdiApi, proxy: UploadProxy, image: Path) -> None:
    def vanish(phase: str) -> None:
        api.objects.pop((PERSISTENT_VOLUME_CLAIMS.plural, NAMESPACE, NAME), None)

    api.set_pod_phase = vanish  # type: ignore[method-assign]
    result = run("pvc", NAME, "--size=1Gi", f"--image-path={image}", "--insecure")
    assert result.exit_code == 1
    assert result.stdout.endswith(
        "Timed out waiting for post upload processing to complete, "
        "please check upload pod status for progress\n"
    )
    assert result.stderr == f'persistentvolumeclaims "{NAME}" not found\n'


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ("dv", NAME, "--image-path=/no/such/image", "--size=1Gi"),
            "open /no/such/image: no such file or directory",
        ),
        (("dv", NAME, "--image-path={image}"), "when creating a resource, the size must be specified"),
        (("dv", NAME, "--size=1Gi"), "either image-path or archive-path must be provided"),
        (("dv", NAME, "x", "--image-path={image}"), "accepts at most 2 arg(s), received 3"),
        (("dv", NAME, "--image-path={image}", "--wait-secs=-1"), None),
        (
            ("dv", NAME, "--image-path={image}", "--size=1Gi", "--access-mode=ReadOnlyMany"),
            "cannot upload to a readonly volume, use either ReadWriteOnce or ReadWriteMany if supported",
        ),
    ],
)
def test_bad_input_is_one_line_on_stderr(
    api: CdiApi, proxy: UploadProxy, image: Path, args: tuple[str, ...], message: str | None
) -> None:
    result = run(*(arg.format(image=image) for arg in args))
    assert result.exit_code == 1
    if message is None:
        message = (
            'invalid argument "-1" for "--wait-secs" flag: strconv.ParseUint: parsing "-1": invalid syntax'
        )
    assert result.stderr == message + "\n"
    assert proxy.posts == []
    assert api.writes == []


def test_no_create_needs_the_pvc(api: CdiApi, proxy: UploadProxy, image: Path) -> None:
    result = run("dv", NAME, "--no-create", f"--image-path={image}")
    assert result.exit_code == 1
    assert result.stdout == f"PVC {NAMESPACE}/{NAME} not found \n"
    assert result.stderr == f'persistentvolumeclaims "{NAME}" not found\n'


def test_without_a_proxy_url_the_upload_stops(api: CdiApi, image: Path) -> None:
    api.add(CDI_CONFIGS, {"metadata": {"name": "config"}, "spec": {}, "status": {}})
    api.add(PERSISTENT_VOLUME_CLAIMS, claim(READY))
    result = run("pvc", NAME, "--no-create", f"--image-path={image}")
    assert result.exit_code == 1
    assert result.stderr == "uploadproxy URL not found\n"


@pytest.mark.parametrize("phase", ["WaitForFirstConsumer", "PendingPopulation"])
def test_a_data_volume_waiting_for_its_consumer_needs_force_bind(
    api: CdiApi, proxy: UploadProxy, image: Path, phase: str
) -> None:
    api.add(PERSISTENT_VOLUME_CLAIMS, claim(READY))
    api.add(DATA_VOLUMES, upload_data_volume(phase))
    result = run("dv", NAME, "--size=1Gi", f"--image-path={image}", "--insecure")
    assert result.exit_code == 1
    assert result.stderr == (
        f"cannot upload to DataVolume in {phase} phase, make sure the PVC is Bound, or use force-bind flag\n"
    )


@pytest.mark.parametrize(
    ("annotations", "message"),
    [
        (
            {"cdi.kubevirt.io/storage.deleteAfterCompletion": "true", POD_PHASE: "Succeeded"},
            f"DataVolume already garbage-collected: Assuming PVC {NAMESPACE}/{NAME} "
            "is successfully populated",
        ),
        ({POD_PHASE: "Succeeded"}, f"No DataVolume is associated with the existing PVC {NAMESPACE}/{NAME}"),
    ],
)
def test_a_pvc_without_its_data_volume(
    api: CdiApi, proxy: UploadProxy, image: Path, annotations: dict[str, str], message: str
) -> None:
    api.add(PERSISTENT_VOLUME_CLAIMS, claim(annotations))
    result = run("dv", NAME, "--size=1Gi", f"--image-path={image}")
    assert (result.exit_code, result.stderr) == (1, message + "\n")


def test_a_provisioning_failure_ends_the_wait(api: CdiApi, proxy: UploadProxy, image: Path) -> None:
    api.add(PERSISTENT_VOLUME_CLAIMS, claim({UPLOAD_TARGET: ""}))
    uid = api.get(PERSISTENT_VOLUME_CLAIMS, NAMESPACE, NAME)["metadata"]["uid"]
    api.add(
        EVENTS,
        {
            "metadata": {"name": "e1", "namespace": NAMESPACE},
            "involvedObject": {"kind": "PersistentVolumeClaim", "uid": uid},
            "reason": "ProvisioningFailed",
            "message": "no capacity",
        },
    )
    result = run("pvc", NAME, f"--image-path={image}")
    assert result.exit_code == 1
    assert result.stdout == f"Using existing PVC {NAMESPACE}/{NAME}\n"
    assert result.stderr == "Provisioning failed: no capacity\n"


@pytest.mark.parametrize(
    ("claim_annotations", "bound", "message"),
    [
        (READY, True, f"PVC {NAME} already successfully populated"),
        (READY, False, f"Unable to get PVC Prime name from PVC {NAMESPACE}/{NAME}"),
        (
            {**READY, "cdi.kubevirt.io/storage.populator.pvcPrime": "prime"},
            False,
            f"Unable to get PVC Prime {NAMESPACE}/{NAME}",
        ),
    ],
)
def test_a_populated_data_volume_uploads_to_its_pvc_prime(
    api: CdiApi, proxy: UploadProxy, image: Path, claim_annotations: dict[str, str], bound: bool, message: str
) -> None:
    api.add(
        PERSISTENT_VOLUME_CLAIMS, claim(claim_annotations, status={"phase": "Bound" if bound else "Pending"})
    )
    api.add(DATA_VOLUMES, upload_data_volume("UploadReady", POPULATOR))
    result = run("dv", NAME, "--size=1Gi", f"--image-path={image}", "--insecure")
    assert (result.exit_code, result.stderr) == (1, message + "\n")


def test_the_upload_goes_through_the_pvc_prime(api: CdiApi, proxy: UploadProxy, image: Path) -> None:
    prime = {**claim(READY), "metadata": {"name": "prime", "namespace": NAMESPACE, "annotations": READY}}
    api.add(PERSISTENT_VOLUME_CLAIMS, prime)
    api.add(PERSISTENT_VOLUME_CLAIMS, claim({"cdi.kubevirt.io/storage.populator.pvcPrime": "prime"}))
    api.add(DATA_VOLUMES, upload_data_volume("UploadReady", POPULATOR))
    result = run("dv", NAME, f"--image-path={image}", "--insecure")
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith(f"Using existing PVC {NAMESPACE}/prime\nUploading data to {proxy.url}\n")
    assert api.token_requests[0]["spec"] == {"pvcName": NAME}
    assert proxy.posts[0]["body"] == DISK


def test_an_archive_needs_an_archive_pvc(api: CdiApi, proxy: UploadProxy, image: Path) -> None:
    api.add(PERSISTENT_VOLUME_CLAIMS, claim(READY))
    result = run("pvc", NAME, "--no-create", f"--archive-path={image}", "--insecure")
    assert (result.exit_code, result.stderr) == (
        1,
        f"PVC {NAME} doesn't have archive contentType annotation\n",
    )
