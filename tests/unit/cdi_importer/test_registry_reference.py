"""Registry endpoints are read with Docker's defaults; image environment variables become labels."""

from __future__ import annotations

import pytest

from kubevirt.cdi_importer.registry import ImageReference, RegistryError, env_to_labels, parse_reference


@pytest.mark.parametrize(
    ("endpoint", "reference"),
    [
        (
            "docker://quay.io/containerdisks/fedora:41",
            ImageReference("quay.io", "containerdisks/fedora", "41"),
        ),
        ("docker://registry:5000/disk", ImageReference("registry:5000", "disk", "latest")),
        ("docker://localhost/a/b:v1", ImageReference("localhost", "a/b", "v1")),
        ("docker://fedora", ImageReference("docker.io", "library/fedora", "latest")),
        ("docker://kubevirt/cirros:v1", ImageReference("docker.io", "kubevirt/cirros", "v1")),
        (
            "docker://127.0.0.1:5000/disk@sha256:" + "a" * 64,
            ImageReference("127.0.0.1:5000", "disk", "sha256:" + "a" * 64),
        ),
    ],
)
def test_endpoints_name_registry_repository_and_reference(endpoint: str, reference: ImageReference) -> None:
    assert parse_reference(endpoint) == reference


def test_docker_hub_is_reached_at_its_api_host() -> None:
    assert parse_reference("docker://fedora").api_host == "registry-1.docker.io"


@pytest.mark.parametrize("endpoint", ["oci-archive:/tmp/x.tar", "docker://Upper/Case", "docker://"])
def test_other_endpoints_are_refused(endpoint: str) -> None:
    with pytest.raises(RegistryError):
        parse_reference(endpoint)


def test_kubevirt_environment_variables_become_labels() -> None:
    env = (
        "INSTANCETYPE_KUBEVIRT_IO_DEFAULT_INSTANCETYPE=u1.small",
        "KUBEVIRT_IO_OS=fedora",
        "PATH=/usr/bin",
    )
    assert env_to_labels(env) == {
        "instancetype.kubevirt.io/default-instancetype": "u1.small",
        "kubevirt.io/os": "fedora",
    }
