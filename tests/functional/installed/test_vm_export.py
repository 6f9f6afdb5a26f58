"""VM exports on the local cluster, with booted guests: a VM's disk leaves the cluster and boots again.

The CirrOS-compatible guest boots from a claim filled by the import example (annotated with CDI's
content type, as a DataVolume's claim is) and records its boot on that disk (the guest's ``last``). An
export of the running VM waits, its claim in use; once the VM is stopped the exporter pod serves the
disk, and ``virtctl vmexport download --port-forward`` fetches it through the API server as a gzip of the
raw image. The image is what the claim holds byte for byte, ``qemu-img`` takes it, and a new VM booted
from a claim holding it finds the first VM's boot before its own. Deleting the export takes its pod,
service and token with it.
"""

from __future__ import annotations

import base64
import contextlib
import gzip
import hashlib
import http.client
import json
import os
import shutil
import socket
import ssl
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from localcluster import install
from localcluster.handle import Cluster
from localcluster.pvc_vms import (
    ROOT_CLAIM,
    bound_volume,
    claim,
    import_root_claim,
    pvc_root_vm,
    volume_node,
    volume_path,
)
from localcluster.up import virtctl
from localcluster.vmis import wait_vmi_phase

from kubevirt_testing.guest_console import login_to_cirros, run, virt_api_console
from kubevirt_testing.process import free_port

VM = "exportvm"
EXPORT = "export-root"
COPY_CLAIM = "exported-root"
RUNNING_TIMEOUT = 240.0
CONTENT_TYPE = "cdi.kubevirt.io/storage.contentType"


@pytest.fixture(scope="module")
def export_namespace(cluster: Cluster, kubevirt: float) -> Iterator[str]:
    gate = install.feature_gates(cluster, "VMExport")
    with gate, cluster.vm_namespace(f"ft-export-{os.getpid() % 10000}") as name:
        yield name


def _boots(cluster: Cluster, namespace: str, name: str) -> int:
    """The boots the guest's boot disk recorded (CirrOS's ``last``), read on its console."""
    expecter = virt_api_console(str(cluster.kubeconfig), namespace, name)
    try:
        login_to_cirros(expecter, name)
        return sum(1 for line in run(expecter, "last reboot").splitlines() if line.startswith("reboot"))
    finally:
        expecter.stream.close()


def _virtctl(cluster: Cluster, *args: str) -> str:
    done = virtctl(cluster, *args)
    assert done.returncode == 0, f"virtctl {' '.join(args)}: {done.stdout}{done.stderr}"
    return done.stdout


def _export(cluster: Cluster, namespace: str) -> dict[str, Any]:
    return cluster.find("vmexport", EXPORT, namespace) or {}


def _ready_reason(export: dict[str, Any]) -> tuple[str, str]:
    for condition in export.get("status", {}).get("conditions", []):
        if condition["type"] == "Ready":
            return condition["status"], condition.get("reason", "")
    return "", ""


def _wait_export(
    cluster: Cluster, namespace: str, what: str, done: Any, timeout: float = 180
) -> dict[str, Any]:
    seen: dict[str, Any] = {}

    def check() -> bool:
        nonlocal seen
        seen = _export(cluster, namespace)
        return bool(done(seen))

    try:
        cluster.wait_until(f"export {what}", check, timeout)
    except AssertionError as error:
        pods = cluster.kubectl("get", "pods", "-n", namespace, "-o", "wide", check=False)
        raise AssertionError(f"{error}\n{json.dumps(seen.get('status'), indent=1)}\n{pods.stdout}") from error
    return seen


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as source:
        while chunk := source.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def test_a_stopped_vms_disk_is_exported_downloaded_and_boots_a_new_vm(
    cluster: Cluster, export_namespace: str, tmp_path: Path
) -> None:
    namespace = export_namespace
    import_root_claim(cluster, namespace)
    cluster.kubectl("annotate", "pvc", ROOT_CLAIM, "-n", namespace, f"{CONTENT_TYPE}=kubevirt")
    cluster.kubectl("create", "-n", namespace, "-f", "-", stdin=json.dumps(pvc_root_vm(VM)))
    wait_vmi_phase(cluster, VM, namespace, timeout=RUNNING_TIMEOUT)
    assert _boots(cluster, namespace, VM) == 1  # a fresh copy of the image's disk

    # The VM runs: its claim is in use, so the export waits without an exporter pod.
    _virtctl(cluster, "vmexport", "create", EXPORT, "-n", namespace, f"--vm={VM}")
    waiting = _wait_export(cluster, namespace, "in use", lambda e: _ready_reason(e) == ("False", "InUse"))
    assert waiting["status"]["phase"] == "Pending"
    assert cluster.find("pod", f"virt-export-{EXPORT}", namespace) is None

    cluster.kubectl(
        "patch", "vm", VM, "-n", namespace, "--type=merge", "-p", '{"spec":{"runStrategy":"Halted"}}'
    )
    ready = _wait_export(cluster, namespace, "ready", lambda e: e.get("status", {}).get("phase") == "Ready")
    status = ready["status"]
    assert _ready_reason(ready) == ("True", "PodReady")
    assert status["tokenSecretRef"] == f"secret-{EXPORT}"  # the token virtctl made
    assert status["serviceName"] == f"virt-export-{EXPORT}"
    assert status["virtualMachineName"] == VM
    internal = status["links"]["internal"]
    assert internal["cert"].startswith("-----BEGIN CERTIFICATE-----")
    (volume,) = internal["volumes"]
    assert volume["name"] == ROOT_CLAIM
    base = f"https://virt-export-{EXPORT}.{namespace}.svc/volumes/{ROOT_CLAIM}"
    assert {f["format"]: f["url"] for f in volume["formats"]} == {
        "raw": f"{base}/disk.img",
        "gzip": f"{base}/disk.img.gz",
    }

    # The gzip of the raw image, through a port-forward to the exporter pod (insecure there, as KubeVirt's).
    downloaded = tmp_path / "disk.img.gz"
    _virtctl(
        cluster, "vmexport", "download", EXPORT, "-n", namespace, f"--volume={ROOT_CLAIM}",
        f"--output={downloaded}", "--port-forward", "--keep-vme",
    )  # fmt: skip
    image = tmp_path / "disk.img"
    with gzip.open(downloaded, "rb") as source, image.open("wb") as target:
        shutil.copyfileobj(source, target, 1 << 20)
    source_pv = bound_volume(cluster, namespace, ROOT_CLAIM)
    assert _sha256(image) == _sha256(volume_path(cluster, source_pv) / "disk.img")
    info = json.loads(
        subprocess.run(
            ["qemu-img", "info", "--output=json", str(image)], capture_output=True, text=True, check=True
        ).stdout
    )
    assert info["format"] == "raw"

    # virt-exportproxy serves the same bytes under the export's API path, and refuses a wrong token.
    token = _token(cluster, namespace, status["tokenSecretRef"])
    proxy_path = f"/api/export.kubevirt.io/v1beta1/namespaces/{namespace}/virtualmachineexports/{EXPORT}"
    raw_path = f"{proxy_path}/volumes/{ROOT_CLAIM}/disk.img"
    with _proxy_forwarded(cluster) as fetch:
        assert fetch(raw_path, "wrong-token")[0] == 401
        status_code, digest = fetch(raw_path, token)
        assert (status_code, digest) == (200, _sha256(image))

    # The VM's manifests, as the exporter serves them: the VM, and a DataVolume importing the export's disk.
    listed = yaml.safe_load_all(
        _virtctl(cluster, "vmexport", "download", EXPORT, "-n", namespace, "--manifest", "--port-forward")
    )
    by_kind = {doc["kind"]: doc for doc in listed if isinstance(doc, dict)}
    assert by_kind["VirtualMachine"]["metadata"]["name"] == VM
    imported = by_kind["DataVolume"]["spec"]["source"]["http"]
    assert imported["url"] == f"{base}/disk.img.gz"

    _virtctl(cluster, "vmexport", "delete", EXPORT, "-n", namespace)
    cluster.wait_until(
        "the export's pod, service and token are gone", lambda: not _leftovers(cluster, namespace), 120
    )

    # A new claim holding the downloaded image (what an upload would leave) boots a new VM.
    node = volume_node(source_pv)
    cluster.kubectl(
        "create", "-n", namespace, "-f", "-", stdin=json.dumps(claim(COPY_CLAIM, "64Mi", node=node))
    )
    cluster.wait_until(
        "the copy's claim is bound",
        lambda: (cluster.find("pvc", COPY_CLAIM, namespace) or {}).get("status", {}).get("phase") == "Bound",
        60,
    )
    target_file = volume_path(cluster, bound_volume(cluster, namespace, COPY_CLAIM)) / "disk.img"
    shutil.copyfile(image, target_file)
    os.chown(target_file, 107, 107)
    copy_vm = pvc_root_vm("exportcopy")
    (root,) = [v for v in copy_vm["spec"]["template"]["spec"]["volumes"] if v["name"] == "rootdisk"]
    root["persistentVolumeClaim"]["claimName"] = COPY_CLAIM
    cluster.kubectl("create", "-n", namespace, "-f", "-", stdin=json.dumps(copy_vm))
    wait_vmi_phase(cluster, "exportcopy", namespace, timeout=RUNNING_TIMEOUT)
    assert _boots(cluster, namespace, "exportcopy") == 2  # the exported VM's boot, then its own


def _token(cluster: Cluster, namespace: str, secret: str) -> str:
    found = cluster.find("secret", secret, namespace) or {}
    return base64.b64decode(found["data"]["token"]).decode()


@contextlib.contextmanager
def _proxy_forwarded(cluster: Cluster) -> Iterator[Callable[[str, str], tuple[int, str]]]:
    """A fetch through ``kubectl port-forward`` to virt-exportproxy's Service, trusting KubeVirt's CA:
    ``fetch(path, token)`` gives the HTTP status and the body's SHA-256."""
    ca = (cluster.find("configmap", "kubevirt-ca", install.NAMESPACE) or {})["data"]["ca-bundle"]
    context = ssl.create_default_context(cadata=ca)
    context.check_hostname = False  # reached as 127.0.0.1; the chain is what is checked
    port = free_port()
    command = [*cluster.layout.kubectl(), "port-forward", "-n", install.NAMESPACE]
    command += ["service/virt-exportproxy", f"{port}:443"]
    forwarder = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def fetch(path: str, token: str) -> tuple[int, str]:
        connection = http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=60)
        try:
            connection.request("GET", path, headers={"x-kubevirt-export-token": token})
            answer = connection.getresponse()
            digest = hashlib.sha256()
            while chunk := answer.read(1 << 20):
                digest.update(chunk)
            return answer.status, digest.hexdigest()
        finally:
            connection.close()

    def listening() -> bool:
        assert forwarder.poll() is None, f"kubectl port-forward exited: {forwarder.communicate()}"
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=2):
            return True
        return False

    try:
        cluster.wait_until("the port-forward to virt-exportproxy listens", listening, 60)
        yield fetch
    finally:
        forwarder.terminate()
        forwarder.wait(10)


def _leftovers(cluster: Cluster, namespace: str) -> list[str]:
    kinds = (("vmexport", EXPORT), ("pod", f"virt-export-{EXPORT}"), ("service", f"virt-export-{EXPORT}"))
    kinds += (("secret", f"secret-{EXPORT}"),)
    return [f"{kind}/{name}" for kind, name in kinds if cluster.find(kind, name, namespace) is not None]
