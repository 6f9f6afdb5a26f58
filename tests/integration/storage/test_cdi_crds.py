"""The generated cdi.kubevirt.io CRDs (manifests/cdi) on a real kube-apiserver of their own: it accepts
them, stores CDI v1.63's objects without pruning a field, applies their validation rules, and kubectl
prints and finds them as it does CDI's."""

from __future__ import annotations

import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "hack" / "cluster"))

from localcluster.apiserver import ApiServer, running_apiserver  # noqa: E402

from kubevirt.client import KubeClient  # noqa: E402
from kubevirt.client.errors import InvalidError  # noqa: E402
from kubevirt.client.resources import NAMESPACES, Resource  # noqa: E402
from kubevirt_api.cdi.crds import CDI_CRDS  # noqa: E402

CASES = REPO / "tests" / "testdata" / "api" / "cdi"
JSON = dict[str, Any]


def resource(kind: str) -> Resource:
    facts = CDI_CRDS[kind]
    return Resource(facts.group, "v1beta1", facts.plural, kind, namespaced=facts.namespaced)


def case(name: str) -> JSON:
    """A test object with only the metadata a client sends on create."""
    data: JSON = yaml.safe_load((CASES / name).read_text())
    data["metadata"] = {"name": data["metadata"]["name"]}
    return data


@pytest.fixture(scope="module")
def cdi_api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApiServer]:
    # Not the session's API server: KubeVirt's components there must not see a DataVolume CRD.
    with running_apiserver(tmp_path_factory.mktemp("cdi-apiserver"), install_crds=False) as server:
        server.kubectl("apply", "--server-side", "-f", str(REPO / "manifests" / "cdi"))
        server.kubectl("wait", "--for=condition=Established", "--timeout=60s", "crd", "--all")
        yield server


@pytest.fixture(scope="module")
def kube(cdi_api: ApiServer) -> KubeClient:
    return KubeClient.from_kubeconfig(str(cdi_api.kubeconfig))


@pytest.fixture(scope="module")
def namespace(kube: KubeClient) -> str:
    name = f"cdi-{uuid.uuid4().hex[:8]}"
    kube.create(NAMESPACES, None, {"metadata": {"name": name}})
    return name


def create(kube: KubeClient, namespace: str, data: JSON) -> JSON:
    kind = data["kind"]
    return kube.create(resource(kind), namespace if CDI_CRDS[kind].namespaced else None, data)


@pytest.mark.parametrize("name", sorted(p.name for p in CASES.glob("*.yaml")))
def test_cdi_objects_are_stored_without_losing_a_field(kube: KubeClient, namespace: str, name: str) -> None:
    data = case(name)
    data["metadata"]["name"] = Path(name).stem  # two of the configs share their name
    stored = create(kube, namespace, data)
    assert stored["spec"] == data["spec"]
    if CDI_CRDS[data["kind"]].status_subresource and "status" in data:
        # The DataVolume's status is written through its subresource, as CDI's controller does.
        assert "status" not in stored
        stored["status"] = data["status"]
        stored = kube.update_status(resource(data["kind"]), namespace, stored)
    assert stored.get("status") == data.get("status")


def test_a_storage_profile_refuses_an_unknown_access_mode(kube: KubeClient) -> None:
    profile = case("storageprofile.yaml")
    profile["metadata"]["name"] = "illegal"
    profile["spec"]["claimPropertySets"][0]["accessModes"] = ["ReadWriteOnce", "ReadWriteSometimes"]
    with pytest.raises(InvalidError, match="Illegal AccessMode"):
        create(kube, "", profile)


def test_kubectl_prints_cdis_columns_and_knows_the_short_names(
    cdi_api: ApiServer, kube: KubeClient, namespace: str
) -> None:
    dv = case("dv-import-in-progress.yaml")
    dv["metadata"]["name"] = "printed"
    stored = create(kube, namespace, dv)
    stored["status"] = dv["status"]
    kube.update_status(resource("DataVolume"), namespace, stored)
    table = cdi_api.kubectl("get", "dv", "printed", "-n", namespace).stdout.splitlines()
    assert table[0].split() == ["NAME", "PHASE", "PROGRESS", "RESTARTS", "AGE"]
    assert table[1].split()[:4] == ["printed", "ImportInProgress", "45.67%", "1"]
    for short_name in ("dvs", "das"):
        assert cdi_api.kubectl("get", short_name, "-n", namespace, "-o", "name").returncode == 0
    assert cdi_api.kubectl("get", "cdi", "-o", "name").stdout.split() == ["cdi.cdi.kubevirt.io/cdi"]
    listed = cdi_api.kubectl("get", "all", "-n", namespace, "-o", "name").stdout.split()
    assert "datavolume.cdi.kubevirt.io/printed" in listed
