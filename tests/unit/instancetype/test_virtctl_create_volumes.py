"""``virtctl create vm`` with imported (DataVolume template) and sysprep volumes, KubeVirt's way."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from kubevirt.virtctl.root import root


def create(*args: str) -> tuple[int, dict[str, Any] | None, str]:
    result = CliRunner().invoke(root, ["create", "vm", "--name", "vm1", *args])
    document = yaml.safe_load(result.stdout) if result.exit_code == 0 else None
    return result.exit_code, document, result.stderr


def test_a_data_source_import_becomes_a_template_and_a_volume() -> None:
    code, vm, _ = create("--volume-import", "type:ds,src:os-images/fedora,size:10Gi,name:root,bootorder:1")
    assert code == 0
    assert vm is not None
    assert vm["spec"]["dataVolumeTemplates"] == [
        {
            "metadata": {"creationTimestamp": None, "name": "root"},
            "spec": {
                "sourceRef": {"kind": "DataSource", "name": "fedora", "namespace": "os-images"},
                "storage": {"resources": {"requests": {"storage": "10Gi"}}},
            },
        }
    ]
    template = vm["spec"]["template"]["spec"]
    assert template["volumes"] == [{"dataVolume": {"name": "root"}, "name": "root"}]
    assert template["domain"]["devices"]["disks"] == [{"bootOrder": 1, "name": "root"}]
    # A DataSource can carry the labels: both are inferred from it, failures ignored by the server.
    assert vm["spec"]["instancetype"] == {"inferFromVolume": "root", "inferFromVolumeFailurePolicy": "Ignore"}


def test_sources_and_their_params() -> None:
    code, vm, _ = create(
        "--volume-import",
        "type:pvc,src:ns/golden,name:clone",
        "--volume-import",
        "type:registry,url:docker://quay.io/x,pullmethod:node,size:1Gi,name:reg",
        "--volume-import",
        "type:http,url:http://h/x.img,extraheaders:a;b,size:2Gi,name:web",
        "--volume-import",
        "type:blank,size:1Gi,name:scratch",
    )
    assert code == 0
    assert vm is not None
    specs = {t["metadata"]["name"]: t["spec"] for t in vm["spec"]["dataVolumeTemplates"]}
    assert specs["clone"] == {
        "source": {"pvc": {"name": "golden", "namespace": "ns"}},
        "storage": {"resources": {}},
    }
    assert specs["reg"]["source"] == {"registry": {"pullMethod": "node", "url": "docker://quay.io/x"}}
    assert specs["web"]["source"] == {"http": {"extraHeaders": ["a", "b"], "url": "http://h/x.img"}}
    assert specs["scratch"]["source"] == {"blank": {}}


def test_deprecated_flags_are_put_in_front_of_the_imports() -> None:
    result = CliRunner().invoke(
        root,
        [
            "create",
            "vm",
            "--volume-import",
            "type:blank,size:1Gi,name:last",
            "--volume-blank",
            "size:1Gi,name:first",
        ],
    )
    assert result.exit_code == 0
    assert result.stderr == "Flag --volume-blank has been deprecated, use flag --volume-import instead\n"
    names = [t["metadata"]["name"] for t in yaml.safe_load(result.stdout)["spec"]["dataVolumeTemplates"]]
    assert names == ["first", "last"]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("size:1Gi", "type must be specified"),
        ("type:foo", 'invalid volume import type "foo", see help for supported values'),
        ("type:http,size:1Gi", "url is required with http volume source"),
        ("type:http,url:u", "size must be specified"),
        ("type:pvc,src:golden", 'namespace of pvc "golden" must be specified'),
        ("type:registry,url:u,imagestream:i,size:1Gi", "exactly one of url or imagestream must be defined"),
        ("type:registry,url:u,pullmethod:x,size:1Gi", "pullmethod must be set to pod or node"),
        ("type:blank,size:1Gi,colour:red", "unknown param(s): colour:red"),
        ("type:vddk,url:u,size:1Gi", "uuid is required with vddk volume source"),
        ("type:blank,size:1Gi,name:Bad_Name", 'invalid name "Bad_Name": '),
    ],
)
def test_import_refusals(value: str, message: str) -> None:
    code, _, err = create("--volume-import", value)
    assert code == 1
    assert err.startswith(f'Error: failed to parse "--volume-import" flag: {message}')


def test_a_blank_volume_cannot_be_inferred_from_when_asked_explicitly() -> None:
    code, _, err = create("--volume-import", "type:blank,size:1Gi,name:b", "--infer-instancetype-from", "b")
    assert code == 1
    assert "this datavolume is not valid to infer an instancetype or preference from" in err
    # Implicitly the unsuitable volume is just not used.
    code, vm, _ = create("--volume-import", "type:blank,size:1Gi,name:b")
    assert code == 0
    assert vm is not None
    assert "instancetype" not in vm["spec"]


def test_sysprep() -> None:
    code, vm, _ = create("--volume-sysprep", "src:unattend,type:secret")
    assert code == 0
    assert vm is not None
    assert vm["spec"]["template"]["spec"]["volumes"] == [
        {"name": "sysprepdisk", "sysprep": {"secret": {"name": "unattend"}}}
    ]
    code, _, err = create("--volume-sysprep", "src:ns/unattend")
    assert (code, err) == (
        1,
        'Error: failed to parse "--volume-sysprep" flag: '
        'not allowed to specify namespace of configmap or secret "unattend"\n',
    )
    code, _, err = create("--volume-sysprep", "src:x,type:disk")
    assert 'invalid sysprep source type "disk", supported values are: configmap, secret' in err
