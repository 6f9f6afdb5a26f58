"""cloud-init data sources: where the data comes from, KubeVirt's metadata, the ISO layout, bad input."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from kubevirt import cloudinit
from kubevirt_testing.iso import read_iso


def vmi(*volumes: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "web.example", "namespace": "prod", "annotations": {}},
        "spec": {
            "domain": {"firmware": {"uuid": "5d307ca9-b3ef-428c-8861-06e72d69f223"}},
            "volumes": list(volumes),
            **spec,
        },
    }


def test_no_cloud_inline_user_data_and_base64_network_data(tmp_path: Path) -> None:
    network = "version: 2\nethernets: {}\n"
    source = {
        "userData": "#cloud-config\nruncmd: [echo hi]\n",
        "networkDataBase64": base64.b64encode(network.encode()).decode(),
    }
    data = cloudinit.read_volume_data(vmi({"name": "ci", "cloudInitNoCloud": source}), tmp_path)
    assert data is not None
    assert data.meta_data == {"instance-id": "5d307ca9-b3ef-428c-8861-06e72d69f223", "local-hostname": "web"}

    path = cloudinit.iso_path(tmp_path / "cloud-init-data", data.data_source, "web.example", "prod")
    assert path == tmp_path / "cloud-init-data/prod/web.example/noCloud.iso"
    cloudinit.write_iso_image(data, path)
    label, files = read_iso(path)
    assert label == "cidata"
    assert files == {
        "meta-data": b'{"instance-id":"5d307ca9-b3ef-428c-8861-06e72d69f223","local-hostname":"web"}',
        "user-data": source["userData"].encode(),
        "network-config": network.encode(),
    }
    assert not list(path.parent.glob("*.staging"))


def test_config_drive_layout_and_metadata(tmp_path: Path) -> None:
    source = {"userDataBase64": base64.b64encode(b"#!/bin/sh\necho hi\n").decode()}
    spec_vmi = vmi({"name": "ci", "cloudInitConfigDrive": source}, hostname="custom")
    spec_vmi["metadata"]["annotations"] = {"kubevirt.io/instancetype-name": "u1.small"}
    data = cloudinit.read_volume_data(spec_vmi, tmp_path)
    assert data is not None
    path = cloudinit.iso_path(tmp_path, data.data_source, "web.example", "prod")
    assert path.name == "configdrive.iso"
    cloudinit.write_iso_image(data, path)
    label, files = read_iso(path)
    assert label == "config-2"
    assert set(files) == {"openstack/latest/meta_data.json", "openstack/latest/user_data"}
    assert json.loads(files["openstack/latest/meta_data.json"]) == {
        "instance_type": "u1.small",
        "instance_id": "web.example.prod",
        "hostname": "custom",
        "uuid": "5d307ca9-b3ef-428c-8861-06e72d69f223",
    }
    assert files["openstack/latest/user_data"] == b"#!/bin/sh\necho hi\n"


def test_secret_ref_reads_the_mounted_keys(tmp_path: Path) -> None:
    (tmp_path / "ci").mkdir()
    (tmp_path / "ci" / "userData").write_bytes(b"#cloud-config\nfrom: secret\n")
    (tmp_path / "ci" / "networkdata").write_bytes(b"version: 1\n")
    source = {"secretRef": {"name": "s"}, "networkDataSecretRef": {"name": "s"}}
    data = cloudinit.read_volume_data(vmi({"name": "ci", "cloudInitNoCloud": source}), tmp_path)
    assert data is not None
    assert (data.user_data, data.network_data) == (b"#cloud-config\nfrom: secret\n", b"version: 1\n")


def test_ssh_keys_propagated_through_no_cloud(tmp_path: Path) -> None:
    keys = tmp_path / "my-keys-access-cred"
    keys.mkdir()
    (keys / "key1").write_text("ssh-ed25519 AAAA one")
    (keys / "..data").mkdir()  # the kubelet's own entries are not keys
    credential = {
        "sshPublicKey": {
            "source": {"secret": {"secretName": "my-keys"}},
            "propagationMethod": {"noCloud": {}},
        }
    }
    spec_vmi = vmi({"name": "ci", "cloudInitNoCloud": {"userData": "x"}}, accessCredentials=[credential])
    data = cloudinit.read_volume_data(spec_vmi, tmp_path)
    assert data is not None
    assert data.meta_data["public-keys"] == {"0": "ssh-ed25519 AAAA one"}


def test_no_cloud_volume_means_no_data(tmp_path: Path) -> None:
    assert cloudinit.read_volume_data(vmi({"name": "d", "emptyDisk": {"capacity": "1Gi"}}), tmp_path) is None


@pytest.mark.parametrize(
    ("source", "message"),
    [
        (
            {"userDataBase64": "not base64!"},
            r"spec.volumes\[1\].cloudInitNoCloud.userDataBase64: not valid base64",
        ),
        (
            {"userData": "x" * (cloudinit.MAX_INLINE_DATA + 1)},
            r"spec.volumes\[1\].cloudInitNoCloud.userData: .* more than",
        ),
        (
            {"networkDataBase64": base64.b64encode(b"x" * (cloudinit.MAX_INLINE_DATA + 10)).decode()},
            r"spec.volumes\[1\].cloudInitNoCloud.networkDataBase64: more than",
        ),
        (
            {},
            r"spec.volumes\[1\].cloudInitNoCloud: userDataBase64, userData, networkDataBase64 or networkData",
        ),
        (
            {"secretRef": {"name": "missing"}},
            r"spec.volumes\[1\].cloudInitNoCloud.secretRef: no cloud-init data-source found",
        ),
        ({"userData": 5}, r"spec.volumes\[1\].cloudInitNoCloud.userData: must be a string"),
    ],
)
def test_bad_input_names_the_field(tmp_path: Path, source: dict[str, Any], message: str) -> None:
    spec_vmi = vmi(
        {"name": "root", "emptyDisk": {"capacity": "1Gi"}}, {"name": "ci", "cloudInitNoCloud": source}
    )
    with pytest.raises(cloudinit.CloudInitError, match=message):
        cloudinit.read_volume_data(spec_vmi, tmp_path)


def test_an_oversize_secret_key_is_refused(tmp_path: Path) -> None:
    (tmp_path / "ci").mkdir()
    (tmp_path / "ci" / "userdata").write_bytes(b"x" * (cloudinit.MAX_SECRET_DATA + 1))
    with pytest.raises(cloudinit.CloudInitError, match=r"secret ci/userdata: .* more than"):
        cloudinit.read_volume_data(
            vmi({"name": "ci", "cloudInitNoCloud": {"secretRef": {"name": "s"}}}), tmp_path
        )


def test_a_secret_key_linking_out_of_the_volume_is_not_followed(tmp_path: Path) -> None:
    (tmp_path / "host-file").write_text("host data")
    (tmp_path / "ci").mkdir()
    (tmp_path / "ci" / "userdata").symlink_to(tmp_path / "host-file")
    with pytest.raises(cloudinit.CloudInitError, match="no cloud-init data-source found"):
        cloudinit.read_volume_data(
            vmi({"name": "ci", "cloudInitNoCloud": {"secretRef": {"name": "s"}}}), tmp_path
        )


def test_a_volume_name_that_climbs_is_refused(tmp_path: Path) -> None:
    with pytest.raises(
        cloudinit.CloudInitError, match=r"spec.volumes\[0\].name: '\.\.' is not a volume name"
    ):
        cloudinit.read_volume_data(
            vmi({"name": "..", "cloudInitNoCloud": {"secretRef": {"name": "s"}}}), tmp_path
        )


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"accessCredentials": "x"}, r"spec.accessCredentials: must be a list"),
        ({"accessCredentials": ["x"]}, r"spec.accessCredentials\[0\]: must be an object"),
        (
            {"accessCredentials": [{"sshPublicKey": []}]},
            r"spec.accessCredentials\[0\].sshPublicKey: must be an object",
        ),
        (
            {
                "accessCredentials": [
                    {
                        "sshPublicKey": {
                            "propagationMethod": {"noCloud": {}},
                            "source": {"secret": {"secretName": 5}},
                        }
                    }
                ]
            },
            r"secretName: '5' is not a secret name",
        ),
        ({"domain": {"firmware": "uefi"}}, r"spec.domain.firmware: must be an object"),
    ],
)
def test_malformed_fields_are_named(tmp_path: Path, spec: dict[str, Any], message: str) -> None:
    document = vmi({"name": "ci", "cloudInitNoCloud": {"userData": "x"}}, **spec)
    with pytest.raises(cloudinit.CloudInitError, match=message):
        cloudinit.read_volume_data(document, tmp_path)
