"""DataVolumes on a cluster without upstream CDI: virt-operator runs the project's importer under the
``DataImporter`` gate, and VMs' ``dataVolumeTemplates`` are filled by it, with booted guests.

- A VM whose root disk is a DataVolume imported over HTTP (the CirrOS-compatible guest's qcow2 from the
  in-cluster image server) and a blank DataVolume as a data disk: virt-controller creates both, owned by
  the VM; the importer converts the image into the claim; the VM boots from it, and what the guest wrote
  to the blank disk is there after a restart. Once it is stopped, a VM whose two DataVolumes clone its
  claims (``pvc`` sources, host-assisted: a clone-mode upload server and a source pod) boots from the
  cloned root and finds the marker on the cloned data disk; a DataVolume of another namespace cloning the
  data disk gets CDI's clone token from the webhook and succeeds.
- ``virtctl image-upload dv`` (the project's virtctl, as KubeVirt's is used) creates an upload DataVolume,
  gets a token from the ``upload.cdi.kubevirt.io`` API and posts the CirrOS-compatible guest's qcow2 through
  ``cdi-uploadproxy`` to the claim's ``cdi-upload-<claim>`` server; the DataVolume succeeds, the upload
  server's pod, Service and Secret are gone, and a VM boots from the claim. The proxy refuses a request
  without a token and one whose token names a claim that is not an upload target.
- A VM whose root disk is a DataVolume with a ``registry`` source (the CirrOS-compatible guest's
  containerDisk, served by the image server's read-only registry, listed in the CDI object's insecure
  registries) boots.
- A DataVolume whose URL answers 404 never succeeds: it stays ``ImportInProgress`` with its importer
  restarting and the Running condition's reason ``Error``; the VM that uses it reports KubeVirt's
  ``DataVolumeError`` and its VMI stays Pending with ``DataVolumesReady=False``.
"""

from __future__ import annotations

import json
import os
import ssl
import subprocess
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from localcluster import imageserver, install, testguest
from localcluster.handle import Cluster
from localcluster.layout import Layout
from localcluster.pvc_vms import DataDisk, pvc_root_vm
from localcluster.up import virtctl
from localcluster.vmis import set_run_strategy, wait_vmi_phase

from kubevirt_api.cdi.crds import CDI_CRDS
from kubevirt_testing.guest_console import cirros_login, run
from kubevirt_testing.guest_disks import guest_disk, read_marker, write_marker

JSON = dict[str, Any]
GATE = "DataImporter"
DATA_VOLUME_CRD = "datavolumes.cdi.kubevirt.io"
CDI_NAMESPACE = "cdi"
IMPORT_TIMEOUT = 300.0
RUNNING_TIMEOUT = 300.0
GUEST_IMAGE = "test-guest-cirros-compatible.qcow2"
UPLOAD_API_SERVICE = "v1beta1.upload.cdi.kubevirt.io"
UPLOAD_TIMEOUT = 300
MARKER = "written-to-the-blank-datavolume"


@pytest.fixture(scope="module")
def importer(cluster: Cluster, kubevirt: float) -> Iterator[None]:
    """The DataImporter gate on (virt-operator runs cdi-deployment) and the image server up."""
    imageserver.deploy(cluster)
    try:
        with install.feature_gates(cluster, GATE):
            cluster.wait_until(
                "the DataVolume kind served",
                lambda: cluster.kubectl("get", "crd", DATA_VOLUME_CRD, check=False).returncode == 0,
                120,
            )
            for deployment in ("cdi-deployment", "cdi-apiserver", "cdi-uploadproxy"):
                cluster.rollout(CDI_NAMESPACE, deployment, 180)
            cluster.wait_until(
                "the upload token API available",
                lambda: (
                    _condition(cluster.find("apiservice", UPLOAD_API_SERVICE) or {}, "Available").get(
                        "status"
                    )
                    == "True"
                ),
                120,
            )
            yield
    finally:
        # virt-operator leaves the cdi.kubevirt.io kinds (users' DataVolumes) when the gate goes off; the
        # modules after this one expect a cluster without them, as KubeVirt's CDI integration follows them.
        crds = [facts.name for facts in CDI_CRDS.values()]
        cluster.kubectl("delete", "crd", *crds, "--ignore-not-found", "--wait=true")
        cluster.kubectl("delete", "namespace", CDI_NAMESPACE, "--ignore-not-found", "--wait=true")
        imageserver.remove(cluster)


@pytest.fixture(scope="module")
def place(cluster: Cluster, importer: None) -> Iterator[str]:
    with cluster.vm_namespace(f"ft-dv-{os.getpid() % 10000}") as name:
        yield name


def _template(name: str, source: JSON, size: str) -> JSON:
    return {
        "metadata": {"name": name},
        "spec": {"source": source, "storage": {"resources": {"requests": {"storage": size}}}},
    }


def _dv_vm(name: str, root_url: str) -> JSON:
    """The CirrOS-compatible PVC-root VM with its root and a data disk from DataVolume templates."""
    vm = pvc_root_vm(name, (DataDisk("data", f"{name}-data", "DVDATA", data_volume=True),))
    spec = vm["spec"]
    (root,) = [v for v in spec["template"]["spec"]["volumes"] if v["name"] == "rootdisk"]
    root.pop("persistentVolumeClaim")
    root["dataVolume"] = {"name": f"{name}-root"}
    spec["dataVolumeTemplates"] = [
        _template(f"{name}-root", {"http": {"url": root_url}}, "128Mi"),
        _template(f"{name}-data", {"blank": {}}, "64Mi"),
    ]
    return vm


def _dv(cluster: Cluster, namespace: str, name: str) -> JSON:
    return cluster.find("dv", name, namespace) or {}


def _condition(obj: JSON, kind: str) -> JSON:
    return next((c for c in (obj.get("status") or {}).get("conditions") or [] if c.get("type") == kind), {})


def _wait_phase(cluster: Cluster, namespace: str, name: str, phase: str) -> JSON:
    found: JSON = {}

    def reached() -> bool:
        found.update(_dv(cluster, namespace, name))
        return (found.get("status") or {}).get("phase") == phase

    try:
        cluster.wait_until(f"DataVolume {name} {phase}", reached, IMPORT_TIMEOUT)
    except AssertionError as error:
        pods = cluster.kubectl("get", "pods", "-n", namespace, "-o", "wide", check=False).stdout
        raise AssertionError(f"{error}: {json.dumps(found.get('status'))}\n{pods}") from error
    return found


def test_a_vm_boots_from_an_http_datavolume_keeps_a_blank_ones_data_and_its_clones_boot(
    cluster: Cluster, place: str
) -> None:
    vm = _dv_vm("dv-vm", imageserver.url(GUEST_IMAGE))
    cluster.kubectl("create", "-n", place, "-f", "-", stdin=json.dumps(vm))
    owner = (cluster.find("vm", "dv-vm", place) or {})["metadata"]["uid"]

    root = _wait_phase(cluster, place, "dv-vm-root", "Succeeded")
    assert root["status"]["progress"] == "100.0%"
    assert [o["uid"] for o in root["metadata"]["ownerReferences"] if o.get("controller")] == [owner]
    assert _condition(root, "Ready")["status"] == "True"
    claim = cluster.find("pvc", "dv-vm-root", place) or {}
    assert claim["metadata"]["annotations"]["cdi.kubevirt.io/storage.import.endpoint"] == imageserver.url(
        GUEST_IMAGE
    )
    assert claim["metadata"]["annotations"]["cdi.kubevirt.io/storage.pod.phase"] == "Succeeded"
    _wait_phase(cluster, place, "dv-vm-data", "Succeeded")

    vmi = wait_vmi_phase(cluster, "dv-vm", place, timeout=RUNNING_TIMEOUT)
    assert _condition(vmi, "DataVolumesReady")["status"] == "True"
    expecter = cirros_login(str(cluster.kubeconfig), place, "dv-vm")
    try:
        device = guest_disk(expecter, "DVDATA")
        write_marker(expecter, device, MARKER)
        run(expecter, "sync")
    finally:
        expecter.stream.close()

    set_run_strategy(cluster, place, "dv-vm", "Halted")
    cluster.wait_until("the VMI gone", lambda: cluster.find("vmi", "dv-vm", place) is None, 180)
    set_run_strategy(cluster, place, "dv-vm", "Always")
    wait_vmi_phase(cluster, "dv-vm", place, timeout=RUNNING_TIMEOUT, other_than_uid=vmi["metadata"]["uid"])
    expecter = cirros_login(str(cluster.kubeconfig), place, "dv-vm")
    try:
        assert read_marker(expecter, guest_disk(expecter, "DVDATA")) == MARKER
    finally:
        expecter.stream.close()

    # Clones: the source pod of a host-assisted clone waits while a running VM uses the source.
    set_run_strategy(cluster, place, "dv-vm", "Halted")
    cluster.wait_until("the VMI gone", lambda: cluster.find("vmi", "dv-vm", place) is None, 180)
    _boots_from_clones(cluster, place)
    _clones_across_namespaces(cluster, place)


def _boots_from_clones(cluster: Cluster, place: str) -> None:
    """A VM whose disks are clones of dv-vm's (root: size taken from the source) boots from the cloned root
    and finds the marker on the cloned data disk."""
    vm = _dv_vm("clone-vm", "unused")
    vm["spec"]["dataVolumeTemplates"] = [
        {
            "metadata": {"name": "clone-vm-root"},
            "spec": {"source": {"pvc": {"namespace": place, "name": "dv-vm-root"}}, "storage": {}},
        },
        _template("clone-vm-data", {"pvc": {"namespace": place, "name": "dv-vm-data"}}, "64Mi"),
    ]
    cluster.kubectl("create", "-n", place, "-f", "-", stdin=json.dumps(vm))
    for name in ("clone-vm-root", "clone-vm-data"):
        dv = _wait_phase(cluster, place, name, "Succeeded")
        assert dv["status"]["progress"] == "100.0%"
        claim = cluster.find("pvc", name, place) or {}
        annotations = claim["metadata"]["annotations"]
        assert annotations["cdi.kubevirt.io/cloneType"] == "copy"
        assert annotations["k8s.io/CloneOf"] == "true"
        assert "cdi.kubevirt.io/cloneSource" not in (claim["metadata"].get("finalizers") or [])

    def workers_gone() -> bool:
        pods = cluster.kubectl_json("get", "pods", "-n", place)["items"]
        names = [pod["metadata"]["name"] for pod in pods]  # type: ignore[attr-defined, index]
        return not [n for n in names if n.endswith("-source-pod") or n.startswith("cdi-upload-")]

    cluster.wait_until("the clone source pods and upload servers gone", workers_gone, 60)
    wait_vmi_phase(cluster, "clone-vm", place, timeout=RUNNING_TIMEOUT)
    expecter = cirros_login(str(cluster.kubeconfig), place, "clone-vm")
    try:
        assert read_marker(expecter, guest_disk(expecter, "DVDATA")) == MARKER
    finally:
        expecter.stream.close()
    set_run_strategy(cluster, place, "clone-vm", "Halted")


def _clones_across_namespaces(cluster: Cluster, place: str) -> None:
    """A DataVolume of another namespace cloning dv-vm's data disk, created by a user allowed to: CDI's
    webhook adds the clone token, the controller its own, and the clone succeeds."""
    with cluster.vm_namespace(f"{place}-b") as other:
        dv = {
            "apiVersion": "cdi.kubevirt.io/v1beta1",
            "kind": "DataVolume",
            # No VM consumes it: its claim binds for the upload server (the class waits for a consumer).
            "metadata": {
                "name": "copy",
                "annotations": {"cdi.kubevirt.io/storage.bind.immediate.requested": "true"},
            },
            "spec": {
                "source": {"pvc": {"namespace": place, "name": "dv-vm-data"}},
                "storage": {"resources": {"requests": {"storage": "64Mi"}}},
            },
        }
        cluster.kubectl("create", "-n", other, "-f", "-", stdin=json.dumps(dv))
        created = _dv(cluster, other, "copy")
        assert "cdi.kubevirt.io/storage.clone.token" in created["metadata"]["annotations"]
        _wait_phase(cluster, other, "copy", "Succeeded")
        claim = cluster.find("pvc", "copy", other) or {}
        assert claim["metadata"]["annotations"]["k8s.io/CloneRequest"] == f"{place}/dv-vm-data"
        assert "cdi.kubevirt.io/storage.extended.clone.token" in claim["metadata"]["annotations"]


def test_a_url_that_is_not_there_is_a_datavolume_error_not_a_success(cluster: Cluster, place: str) -> None:
    vm = _dv_vm("dv-missing", imageserver.url("no-such-image.qcow2"))
    cluster.kubectl("create", "-n", place, "-f", "-", stdin=json.dumps(vm))
    failing = _wait_phase(cluster, place, "dv-missing-root", "ImportInProgress")

    def restarted_with_an_error() -> bool:
        failing.update(_dv(cluster, place, "dv-missing-root"))
        running = _condition(failing, "Running")
        return int(failing["status"].get("restartCount", 0)) >= 1 and running.get("reason") == "Error"

    cluster.wait_until("the importer restarting with an error", restarted_with_an_error, IMPORT_TIMEOUT)
    assert "expected status code 200, got 404" in _condition(failing, "Running")["message"], failing["status"]
    cluster.wait_until(
        "the VM's DataVolumeError",
        lambda: (
            ((cluster.find("vm", "dv-missing", place) or {}).get("status") or {}).get("printableStatus")
            == "DataVolumeError"
        ),
        120,
    )
    # The local StorageClass binds on first consumer: as in KubeVirt, the VM creates its VMI at once, whose
    # temporary pod has the claims bound, and the VMI then waits for the DataVolumes.
    vmi = cluster.find("vmi", "dv-missing", place) or {}
    assert (vmi.get("status") or {}).get("phase", "Pending") == "Pending", vmi.get("status")
    ready = _condition(vmi, "DataVolumesReady")
    assert (ready.get("status"), ready.get("reason")) == ("False", "NotAllDVsReady"), vmi.get("status")
    assert failing["status"]["phase"] != "Succeeded"


def _guest_qcow2(into: Path) -> Path:
    """The CirrOS-compatible guest's disk as qcow2, as users upload their images."""
    raw = testguest.build(Layout.from_environment().cache, testguest.CIRROS_COMPATIBLE).disk
    image = into / "cirros-compatible.qcow2"
    subprocess.run(["qemu-img", "convert", "-f", "raw", "-O", "qcow2", str(raw), str(image)], check=True)
    return image


def _proxy_url(cluster: Cluster) -> str:
    service = cluster.find("service", "cdi-uploadproxy", CDI_NAMESPACE) or {}
    return f"https://{service['spec']['clusterIP']}"


def _post_to_proxy(url: str, token: str | None) -> tuple[int, str]:
    insecure = ssl.create_default_context()
    insecure.check_hostname = False
    insecure.verify_mode = ssl.CERT_NONE
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    request = urllib.request.Request(f"{url}/v1beta1/upload", data=b"not an image", headers=headers)
    try:
        with urllib.request.urlopen(request, context=insecure, timeout=60) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def _upload_token(cluster: Cluster, namespace: str, claim: str) -> str:
    request = {
        "apiVersion": "upload.cdi.kubevirt.io/v1beta1",
        "kind": "UploadTokenRequest",
        "metadata": {"name": claim},
        "spec": {"pvcName": claim},
    }
    done = cluster.kubectl("create", "-n", namespace, "-o", "json", "-f", "-", stdin=json.dumps(request))
    token: str = json.loads(done.stdout)["status"]["token"]
    return token


def test_virtctl_image_upload_fills_a_datavolume_a_vm_boots_from(
    cluster: Cluster, place: str, tmp_path: Path
) -> None:
    image = _guest_qcow2(tmp_path)
    proxy = _proxy_url(cluster)
    done = virtctl(
        cluster,
        "image-upload", "dv", "uploaded-root", "-n", place, "--size=128Mi", f"--image-path={image}",
        f"--uploadproxy-url={proxy}", "--insecure", "--force-bind", f"--wait-secs={UPLOAD_TIMEOUT}",
        timeout=2 * UPLOAD_TIMEOUT,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Processing completed successfully" in done.stdout, done.stdout

    dv = _wait_phase(cluster, place, "uploaded-root", "Succeeded")
    assert dv["spec"]["source"] == {"upload": {}}
    assert dv["status"]["progress"] == "N/A"  # CDI counts the progress of imports and clones, not uploads
    claim = cluster.find("pvc", "uploaded-root", place) or {}
    annotations = claim["metadata"]["annotations"]
    assert "cdi.kubevirt.io/storage.upload.target" in annotations
    assert annotations["cdi.kubevirt.io/storage.pod.phase"] == "Succeeded"
    for kind in ("pod", "service", "secret"):
        cluster.wait_until(
            f"the upload server's {kind} removed",
            lambda kind=kind: cluster.find(kind, "cdi-upload-uploaded-root", place) is None,
            120,
        )

    # The proxy: no token is a bad request; a valid token for a claim that is no upload target is refused.
    assert _post_to_proxy(proxy, None)[0] == 400
    cluster.kubectl("create", "-n", place, "-f", "-", stdin=json.dumps(_plain_claim("not-an-upload")))
    status, body = _post_to_proxy(proxy, _upload_token(cluster, place, "not-an-upload"))
    assert (status, body) == (503, "PVC not-an-upload is not an upload target"), (status, body)

    vm = pvc_root_vm("uploaded-vm")
    (root,) = [v for v in vm["spec"]["template"]["spec"]["volumes"] if v["name"] == "rootdisk"]
    root.pop("persistentVolumeClaim")
    root["dataVolume"] = {"name": "uploaded-root"}
    cluster.kubectl("create", "-n", place, "-f", "-", stdin=json.dumps(vm))
    wait_vmi_phase(cluster, "uploaded-vm", place, timeout=RUNNING_TIMEOUT)
    expecter = cirros_login(str(cluster.kubeconfig), place, "uploaded-vm")
    expecter.stream.close()


def _plain_claim(name: str) -> JSON:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "16Mi"}}},
    }


def test_a_vm_boots_from_a_registry_datavolume(cluster: Cluster, place: str) -> None:
    # The image server is also a plain-http registry: CDI imports from it once it is an insecure registry.
    patch = {"spec": {"config": {"insecureRegistries": [imageserver.REGISTRY_HOST]}}}
    cluster.kubectl("patch", "cdi", "cdi", "--type=merge", "-p", json.dumps(patch))
    cluster.wait_until(
        "CDIConfig lists the insecure registry",
        lambda: (
            imageserver.REGISTRY_HOST
            in (
                ((cluster.find("cdiconfig", "config") or {}).get("spec") or {}).get("insecureRegistries")
                or []
            )
        ),
        60,
    )
    vm = pvc_root_vm("registry-vm")
    (root,) = [v for v in vm["spec"]["template"]["spec"]["volumes"] if v["name"] == "rootdisk"]
    root.pop("persistentVolumeClaim")
    root["dataVolume"] = {"name": "registry-root"}
    vm["spec"]["dataVolumeTemplates"] = [
        _template("registry-root", {"registry": {"url": imageserver.registry_url()}}, "128Mi")
    ]
    cluster.kubectl("create", "-n", place, "-f", "-", stdin=json.dumps(vm))

    dv = _wait_phase(cluster, place, "registry-root", "Succeeded")
    assert dv["status"]["progress"] == "100.0%"
    claim = cluster.find("pvc", "registry-root", place) or {}
    annotations = claim["metadata"]["annotations"]
    assert annotations["cdi.kubevirt.io/storage.import.source"] == "registry"
    assert annotations["cdi.kubevirt.io/storage.import.endpoint"] == imageserver.registry_url()
    wait_vmi_phase(cluster, "registry-vm", place, timeout=RUNNING_TIMEOUT)
    expecter = cirros_login(str(cluster.kubeconfig), place, "registry-vm")
    expecter.stream.close()


def test_a_node_pulled_registry_datavolume_imports_the_image_the_node_has(
    cluster: Cluster, place: str
) -> None:
    """``pullMethod: node``: the image (here the CirrOS-compatible guest's containerDisk, already on the
    node) runs as a container of the importer pod and serves its disk to the importer; no registry is
    reached."""
    image = cluster.image("test-guest-cirros-compatible")
    dv = {
        "apiVersion": "cdi.kubevirt.io/v1beta1",
        "kind": "DataVolume",
        "metadata": {
            "name": "node-pull",
            "annotations": {"cdi.kubevirt.io/storage.bind.immediate.requested": "true"},
        },
        "spec": {
            "source": {"registry": {"url": f"docker://{image}", "pullMethod": "node"}},
            "storage": {"resources": {"requests": {"storage": "128Mi"}}},
        },
    }
    cluster.kubectl("create", "-n", place, "-f", "-", stdin=json.dumps(dv))
    done = _wait_phase(cluster, place, "node-pull", "Succeeded")
    assert done["status"]["progress"] == "100.0%"
    claim = cluster.find("pvc", "node-pull", place) or {}
    annotations = claim["metadata"]["annotations"]
    assert annotations["cdi.kubevirt.io/storage.import.registryImportMethod"] == "node"
    assert annotations["cdi.kubevirt.io/storage.condition.running.message"] == "Import Complete"
