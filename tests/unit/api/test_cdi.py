"""The ``cdi.kubevirt.io`` types and CRDs: CDI v1.63's objects parse and dump back unchanged, the CRDs
carry CDI's names, scope, versions and columns, and their schemas judge objects as CDI's do.

The inputs in tests/testdata/api/cdi follow CDI's manifests/example/ objects (``dv-*`` without status)
and the status CDI's controllers write.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubevirt.admission.schema import validate_against
from kubevirt_api.base import ApiParseError
from kubevirt_api.cdi.crds import (
    CDI_CRDS,
    CDI_KIND_MODELS,
    PROJECT_CRD_LABELS,
    cdi_crd_schema,
    cdi_custom_resource_definition,
)
from kubevirt_api.cdi.v1beta1 import PERCENT_PATTERN, CDIConfig, DataVolume, DataVolumeList
from kubevirt_api.core.v1 import VirtualMachine
from kubevirt_api.crd import CRDS
from kubevirt_api.gojson import to_go_json
from kubevirt_api.openapi import UnknownKindError, crd_schema

ROOT = Path(__file__).parents[3]
CASES = ROOT / "tests" / "testdata" / "api" / "cdi"
INPUTS = sorted(CASES.glob("*.yaml"))

JSON = dict[str, Any]


def load(path: Path) -> JSON:
    data: JSON = yaml.safe_load(path.read_text())
    return data


def schema_errors(document: JSON) -> list[str]:
    return validate_against(cdi_crd_schema(document["kind"]), document)


def crd(kind: str) -> JSON:
    return cdi_custom_resource_definition(kind)


# -- the models ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", INPUTS, ids=lambda p: p.stem)
def test_cdi_objects_round_trip(path: Path) -> None:
    data = load(path)
    model = CDI_KIND_MODELS[data["kind"]]
    assert model.from_dict(data).to_dict() == data


def test_the_fields_read_from_a_data_volume() -> None:
    dv = DataVolume.from_dict(load(CASES / "dv-import-in-progress.yaml"))
    assert dv.spec.source is not None
    assert dv.spec.source.http is not None
    assert dv.spec.source.http.secret_extra_headers == ["export-token-header"]
    assert dv.status is not None
    assert (dv.status.phase, dv.status.progress, dv.status.restart_count) == ("ImportInProgress", "45.67%", 1)
    assert dv.status.conditions is not None
    assert [(c.type, c.status, c.reason) for c in dv.status.conditions] == [
        ("Bound", "True", "Bound"),
        ("Ready", "False", "TransferRunning"),
        ("Running", "True", "Pod is running"),
    ]
    registry = DataVolume.from_dict(load(CASES / "dv-registry.yaml")).spec.source
    assert registry is not None
    assert registry.registry is not None
    assert registry.registry.platform is not None
    assert registry.registry.platform.architecture == "amd64"


def test_config_fields_keep_their_json_names() -> None:
    config = CDIConfig.from_dict(load(CASES / "cdiconfig-status.yaml"))
    assert config.spec.import_proxy is not None
    assert config.spec.import_proxy.http_proxy == "http://proxy.example.com:3128"
    assert config.spec.filesystem_overhead is not None
    assert config.spec.filesystem_overhead.global_ == "0.06"
    assert config.status is not None
    assert config.status.filesystem_overhead is not None
    assert config.status.filesystem_overhead.storage_class == {"local": "0.1", "standard": "0.06"}
    assert config.to_dict()["spec"]["importProxy"] == {
        "HTTPProxy": "http://proxy.example.com:3128",
        "noProxy": ".svc,.cluster.local",
    }


def test_a_null_storage_is_left_unset() -> None:
    # CDI's clone example leaves ``storage:`` empty.
    dv = DataVolume.from_dict(
        {"spec": {"source": {"pvc": {"namespace": "ns", "name": "src"}}, "storage": None}}
    )
    assert dv.spec.storage is None
    assert "storage" not in dv.to_dict()["spec"]


def test_bad_input_names_the_field() -> None:
    with pytest.raises(ApiParseError) as err:
        DataVolume.from_dict(
            {"spec": {"source": {"http": {"secretRef": "s"}}}, "status": {"restartCount": "1"}}
        )
    assert sorted(c.path for c in err.value.causes) == ["spec.source.http.url", "status.restartCount"]
    with pytest.raises(ApiParseError) as missing:
        DataVolume.from_dict({"metadata": {"name": "x"}})
    assert [c.path for c in missing.value.causes] == ["spec"]


def test_a_list_parses_its_items() -> None:
    items = [load(CASES / "dv-blank.yaml"), load(CASES / "dv-upload.yaml")]
    listed = DataVolumeList.from_dict(
        {"apiVersion": "cdi.kubevirt.io/v1beta1", "kind": "DataVolumeList", "metadata": {}, "items": items}
    )
    assert [item.metadata.name for item in listed.items if item.metadata] == [
        "blank-image-datavolume",
        "upload-datavolume",
    ]


def test_go_writes_zero_condition_times_as_null() -> None:
    # CDI's operator conditions have no omitempty on their times; its DataVolume status writes them too.
    dv = DataVolume.from_dict(
        {"spec": {"source": {"blank": {}}}, "status": {"conditions": [{"type": "Ready", "status": "False"}]}}
    )
    out = to_go_json(dv)
    assert out["status"]["conditions"] == [
        {"type": "Ready", "status": "False", "lastTransitionTime": None, "lastHeartbeatTime": None}
    ]
    assert out["spec"] == {"source": {"blank": {}}}


# -- the CRDs -----------------------------------------------------------------------------------------


def test_the_cdi_crds_are_apart_from_kubevirts() -> None:
    assert sorted(facts.name for facts in CDI_CRDS.values()) == [
        "cdiconfigs.cdi.kubevirt.io",
        "cdis.cdi.kubevirt.io",
        "datasources.cdi.kubevirt.io",
        "datavolumes.cdi.kubevirt.io",
        "storageprofiles.cdi.kubevirt.io",
    ]
    assert not set(CDI_CRDS) & set(CRDS)
    assert not list((ROOT / "manifests" / "generated").rglob("*.cdi.kubevirt.io.yaml"))
    with pytest.raises(UnknownKindError):
        crd_schema("DataVolume")  # KubeVirt's admission knows no CDI kind
    with pytest.raises(UnknownKindError):
        cdi_crd_schema("VirtualMachine")


@pytest.mark.parametrize("kind", sorted(CDI_CRDS))
def test_every_cdi_crd_is_marked_as_the_projects(kind: str) -> None:
    labels = crd(kind)["metadata"]["labels"]
    assert labels == PROJECT_CRD_LABELS == {"app.kubernetes.io/managed-by": "virt-operator"}


@pytest.mark.parametrize(
    ("kind", "scope", "short_names", "categories"),
    [
        ("DataVolume", "Namespaced", ["dv", "dvs"], ["all"]),
        ("CDI", "Cluster", ["cdi", "cdis"], None),
        ("CDIConfig", "Cluster", None, None),
        ("StorageProfile", "Cluster", None, None),
        ("DataSource", "Namespaced", ["das"], ["all"]),
    ],
)
def test_names_and_scope_follow_cdi(
    kind: str, scope: str, short_names: list[str] | None, categories: list[str] | None
) -> None:
    document = crd(kind)
    plural = kind.lower() + "s"
    assert document["metadata"]["name"] == f"{plural}.cdi.kubevirt.io"
    assert document["spec"]["group"] == "cdi.kubevirt.io"
    assert document["spec"]["scope"] == scope
    names = document["spec"]["names"]
    assert (names["kind"], names["plural"], names["singular"]) == (kind, plural, kind.lower())
    assert names.get("shortNames") == short_names
    assert names.get("categories") == categories


def test_versions_subresources_and_columns_follow_cdi() -> None:
    def versions(kind: str) -> list[tuple[str, bool, bool, Any, list[tuple[str, str, str]]]]:
        return [
            (
                v["name"],
                v["served"],
                v["storage"],
                v.get("subresources"),
                [(c["name"], c["type"], c["jsonPath"]) for c in v.get("additionalPrinterColumns", [])],
            )
            for v in crd(kind)["spec"]["versions"]
        ]

    assert versions("DataVolume") == [
        (
            "v1beta1",
            True,
            True,
            {"status": {}},
            [
                ("Phase", "string", ".status.phase"),
                ("Progress", "string", ".status.progress"),
                ("Restarts", "integer", ".status.restartCount"),
                ("Age", "date", ".metadata.creationTimestamp"),
            ],
        )
    ]
    cdi_columns = [("Age", "date", ".metadata.creationTimestamp"), ("Phase", "string", ".status.phase")]
    assert versions("CDI") == [
        ("v1alpha1", True, False, None, cdi_columns),
        ("v1beta1", True, True, None, cdi_columns),
    ]
    for kind in ("CDIConfig", "StorageProfile", "DataSource"):
        assert versions(kind) == [("v1beta1", True, True, None, [])]


def test_schemas_carry_cdis_markers() -> None:
    dv = cdi_crd_schema("DataVolume")
    assert dv["required"] == ["spec"]
    assert dv["properties"]["metadata"] == {"type": "object"}
    assert dv["properties"]["spec"]["properties"]["contentType"]["enum"] == ["kubevirt", "archive"]
    sets = cdi_crd_schema("StorageProfile")["properties"]["status"]["properties"]["claimPropertySets"]
    assert sets["maxItems"] == 8
    assert sets["items"]["required"] == ["accessModes", "volumeMode"]
    access = sets["items"]["properties"]["accessModes"]
    assert access["maxItems"] == 4
    assert [rule["message"] for rule in access["x-kubernetes-validations"]] == ["Illegal AccessMode"]
    overhead = cdi_crd_schema("CDIConfig")["properties"]["spec"]["properties"]["filesystemOverhead"]
    per_class = overhead["properties"]["storageClass"]["additionalProperties"]
    assert per_class["pattern"] == PERCENT_PATTERN == r"^(0(?:\.\d{1,3})?|1)$"
    spec = cdi_crd_schema("CDI")["properties"]["spec"]["properties"]
    assert spec["uninstallStrategy"]["enum"] == ["RemoveWorkloads", "BlockUninstallIfWorkloadsExist"]
    assert spec["config"] == cdi_crd_schema("CDIConfig")["properties"]["spec"]


def test_no_schema_copies_upstream_prose() -> None:
    def has_description(node: Any) -> bool:
        if isinstance(node, dict):
            return "description" in node or any(has_description(v) for v in node.values())
        if isinstance(node, list):
            return any(has_description(v) for v in node)
        return False

    assert not any(has_description(cdi_crd_schema(kind)) for kind in CDI_CRDS)


@pytest.mark.parametrize("path", INPUTS, ids=lambda p: p.stem)
def test_the_schema_accepts_cdis_objects(path: Path) -> None:
    assert schema_errors(load(path)) == []


@pytest.mark.parametrize(
    ("file", "change", "error"),
    [
        (
            "dv-http-archive.yaml",
            lambda d: d["spec"].update(contentType="iso"),
            "spec.contentType in body should be one of [kubevirt archive]",
        ),
        (
            "dv-http-block.yaml",
            lambda d: d["spec"]["source"]["http"].update(checksum="sha256:0"),
            "spec.source.http.checksum in body is a forbidden property",
        ),
        (
            "dv-import-in-progress.yaml",
            lambda d: d["status"].update(restartCount="1"),
            'status.restartCount in body must be of type integer: "string"',
        ),
        (
            "storageprofile.yaml",
            lambda d: d["spec"]["claimPropertySets"][0].update(volumeMode="Raw"),
            "spec.claimPropertySets.volumeMode in body should be one of [Block Filesystem]",
        ),
        (
            "storageprofile.yaml",
            lambda d: d["spec"]["claimPropertySets"][0].pop("volumeMode"),
            "spec.claimPropertySets.volumeMode in body is required",
        ),
        (
            "cdiconfig-status.yaml",
            lambda d: d["spec"]["filesystemOverhead"].update({"global": "1.5"}),
            r"spec.filesystemOverhead.global in body should match '^(0(?:\.\d{1,3})?|1)$'",
        ),
        (
            "cdi.yaml",
            lambda d: d["spec"].update(imagePullPolicy="Sometimes"),
            "spec.imagePullPolicy in body should be one of [Always IfNotPresent Never]",
        ),
        (
            "datasource.yaml",
            lambda d: d["spec"]["source"]["pvc"].pop("namespace"),
            "spec.source.pvc.namespace in body is required",
        ),
    ],
)
def test_the_schema_refuses_what_cdis_refuses(file: str, change: Any, error: str) -> None:
    document = copy.deepcopy(load(CASES / file))
    change(document)
    assert schema_errors(document) == [error]


def test_the_vm_schema_takes_every_data_volume_source_cdi_has() -> None:
    # KubeVirt v1.6 builds against CDI v1.63: its VM schema knows registry platforms and VDDK extra args.
    templates = [
        {"metadata": {"name": load(CASES / name)["metadata"]["name"]}, "spec": load(CASES / name)["spec"]}
        for name in ("dv-registry.yaml", "dv-vddk.yaml")
    ]
    vm = {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachine",
        "metadata": {"name": "vm"},
        "spec": {"dataVolumeTemplates": templates, "template": {"spec": {"domain": {"devices": {}}}}},
    }
    assert validate_against(crd_schema("VirtualMachine"), vm) == []
    assert VirtualMachine.from_dict(vm).to_dict() == vm
