"""Reading a pod's namespace from the kubelet's directory of the pod (its service-account token volume)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from kubevirt.virt_handler.hotplug_disk.layout import HotplugVolumeError
from kubevirt.virt_handler.hotplug_disk.pod_namespace import pod_namespace
from kubevirt_testing.kubelet_pods import TIMESTAMPED, service_account_volume

POD = "0b9f5a2e-1111-2222-3333-444444444444"


@pytest.fixture
def pods(tmp_path: Path) -> Iterator[int]:
    (tmp_path / "pods").mkdir()
    fd = os.open(tmp_path / "pods", os.O_PATH | os.O_DIRECTORY)
    yield fd
    os.close(fd)


def test_the_namespace_the_kubelet_wrote_is_read(pods: int, tmp_path: Path) -> None:
    service_account_volume(tmp_path / "pods", POD, "tenant-a")
    assert pod_namespace(pods, POD) == "tenant-a"


def test_a_pod_without_a_token_volume_cannot_be_told(pods: int, tmp_path: Path) -> None:
    projected = tmp_path / "pods" / POD / "volumes" / "kubernetes.io~projected" / "my-config"
    projected.mkdir(parents=True)
    (projected / "namespace").write_text("tenant-a")  # a volume of the pod's own making: not the kubelet's
    with pytest.raises(HotplugVolumeError, match=f"the namespace of pod {POD} cannot be verified"):
        pod_namespace(pods, POD)


def test_token_volumes_that_disagree_are_refused(pods: int, tmp_path: Path) -> None:
    service_account_volume(tmp_path / "pods", POD, "tenant-a")
    service_account_volume(tmp_path / "pods", POD, "tenant-b", name="kube-api-access-zzzzz")
    with pytest.raises(HotplugVolumeError, match="is ambiguous: tenant-a, tenant-b"):
        pod_namespace(pods, POD)


def test_a_data_link_out_of_the_volume_is_refused(pods: int, tmp_path: Path) -> None:
    volume = service_account_volume(tmp_path / "pods", POD, "tenant-a")
    (volume / "..data").unlink()
    os.symlink(f"../../../../../{POD}", volume / "..data")
    with pytest.raises(HotplugVolumeError, match=r"\.\.data points out of its volume"):
        pod_namespace(pods, POD)


def test_a_namespace_file_that_is_a_link_is_refused(pods: int, tmp_path: Path) -> None:
    volume = service_account_volume(tmp_path / "pods", POD, "tenant-a")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.write_text("tenant-b")
    (volume / TIMESTAMPED / "namespace").unlink()
    os.symlink(elsewhere, volume / TIMESTAMPED / "namespace")
    with pytest.raises(HotplugVolumeError, match=f"the namespace of pod {POD}: refused"):
        pod_namespace(pods, POD)


def test_a_pod_directory_that_is_a_link_is_refused(pods: int, tmp_path: Path) -> None:
    service_account_volume(tmp_path / "other-pods", POD, "tenant-a")
    os.symlink(tmp_path / "other-pods" / POD, tmp_path / "pods" / POD)
    with pytest.raises(HotplugVolumeError, match="refused"):
        pod_namespace(pods, POD)


def test_an_empty_namespace_file_is_refused(pods: int, tmp_path: Path) -> None:
    volume = service_account_volume(tmp_path / "pods", POD, "tenant-a")
    (volume / TIMESTAMPED / "namespace").write_text("\n")
    with pytest.raises(HotplugVolumeError, match="holds no namespace name"):
        pod_namespace(pods, POD)
