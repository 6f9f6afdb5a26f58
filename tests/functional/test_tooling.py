"""The cluster tooling's own pieces, without a cluster: OCI layers from overlayfs upper directories,
which iptables rules cluster-down may touch, the test certificates, and the Dockerfile from the recipe."""

from __future__ import annotations

import json
import subprocess
import tarfile
from pathlib import Path

import pytest
from cryptography import x509
from localcluster import hostnet, oci, pki, recipe

SNAPSHOT_NAT = [":PREROUTING ACCEPT", ":OUTPUT ACCEPT", ":DOCKERISH -", "-A PREROUTING -j DOCKERISH"]


def test_stale_iptables_are_only_the_clusters() -> None:
    now = [
        *SNAPSHOT_NAT,
        ":KUBE-KUBELET-CANARY -",
        ":OTHER-TOOL -",
        "-A PREROUTING -j KUBE-SERVICES",
        ":KUBE-SERVICES -",
        '-A OUTPUT -m comment --comment "some other tool" -j OTHER-TOOL',
        "-A OUTPUT -s 10.244.0.0/24 -j ACCEPT",
    ]
    rules, chains = hostnet._stale(SNAPSHOT_NAT, now)
    assert rules == ["-A PREROUTING -j KUBE-SERVICES", "-A OUTPUT -s 10.244.0.0/24 -j ACCEPT"]
    assert chains == ["KUBE-KUBELET-CANARY", "KUBE-SERVICES"]  # OTHER-TOOL is not ours
    assert hostnet._stale(SNAPSHOT_NAT, SNAPSHOT_NAT) == ([], [])


@pytest.fixture
def overlay(tmp_path: Path) -> Path:
    """An overlayfs upper directory holding a new file, a deleted file and a replaced directory."""
    lower, upper, work, merged = (tmp_path / name for name in ("lower", "upper", "work", "merged"))
    for directory in (lower / "etc" / "old", upper, work, merged):
        directory.mkdir(parents=True)
    (lower / "etc" / "gone").write_text("x")
    (lower / "etc" / "old" / "inside").write_text("x")
    options = f"lowerdir={lower},upperdir={upper},workdir={work}"
    subprocess.run(["mount", "-t", "overlay", "overlay", "-o", options, str(merged)], check=True)
    try:
        (merged / "etc" / "gone").unlink()
        subprocess.run(["rm", "-r", str(merged / "etc" / "old")], check=True)
        (merged / "etc" / "old").mkdir()
        (merged / "etc" / "old" / "new").write_text("y")
        (merged / "added").write_text("z")
    finally:
        subprocess.run(["umount", str(merged)], check=True)
    return upper


def test_layer_carries_overlay_whiteouts_as_oci_markers(overlay: Path, tmp_path: Path) -> None:
    layer = oci.write_layer(overlay, tmp_path / "layer.tar")
    with tarfile.open(layer.path) as tar:
        names = set(tar.getnames())
        assert {"added", "etc/.wh.gone", "etc/old/.wh..wh..opq", "etc/old/new"} <= names
        assert all(member.mtime == oci.EPOCH for member in tar.getmembers())
    again = oci.write_layer(overlay, tmp_path / "again.tar")
    assert again.digest == layer.digest  # same contents, same digest


def test_archive_is_an_oci_layout_naming_the_image(overlay: Path, tmp_path: Path) -> None:
    layer = oci.write_layer(overlay, tmp_path / "layer.tar")
    config = oci.ImageConfig(entrypoint=["/added"], cmd=[], env=["A=b"])
    digest = oci.write_archive(tmp_path / "image.tar", "localhost/kubevirt/x:devel", [layer], config)
    with tarfile.open(tmp_path / "image.tar") as tar:
        index = json.load(tar.extractfile("index.json"))  # type: ignore[arg-type]
        manifest = json.load(tar.extractfile(f"blobs/sha256/{digest.split(':')[1]}"))  # type: ignore[arg-type]
        image = json.load(tar.extractfile(f"blobs/sha256/{manifest['config']['digest'].split(':')[1]}"))  # type: ignore[arg-type]
    assert index["manifests"][0]["annotations"]["io.containerd.image.name"] == "localhost/kubevirt/x:devel"
    assert manifest["layers"][0]["digest"] == layer.digest
    assert image["rootfs"]["diff_ids"] == [layer.digest]
    assert image["config"]["Entrypoint"] == ["/added"]


def test_serving_pair_is_signed_by_its_ca() -> None:
    ca_pem, cert_pem, _ = pki.serving_pair("svc.ns.svc")
    ca = x509.load_pem_x509_certificate(ca_pem)
    cert = x509.load_pem_x509_certificate(cert_pem)
    cert.verify_directly_issued_by(ca)
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert names.get_values_for_type(x509.DNSName) == ["svc.ns.svc"]


def test_dockerfile_has_a_target_per_binary_from_the_recipe() -> None:
    dockerfile = recipe.dockerfile()
    for binary in (
        "virt-operator",
        "virt-api",
        "virt-controller",
        "virt-handler",
        "virt-launcher",
        "virtctl",
    ):
        assert f" AS {binary}\n" in dockerfile
        assert f'ENTRYPOINT ["{recipe.VENV}/bin/{binary}"]' in dockerfile
    for step in recipe.BASE_STEPS + recipe.LAUNCHER_STEPS:
        assert f"RUN {step}\n" in dockerfile
    assert (Path(__file__).parents[2] / "Dockerfile.build").read_text() == dockerfile
