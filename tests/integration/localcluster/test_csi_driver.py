"""The local cluster's hostpath CSI driver for real (root, real mounts and loop devices), on a unix socket in
a temporary directory: the CSI community's sanity suite (csi-sanity, built from its Go module by
hack/cluster/build-csi and cached) with Filesystem and with Block volumes, then what the suite does not
look at: data surviving snapshot, restore, clone and expansion, the kubelet registration service, and
requests that would lead out of the data directory through a symlink."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import grpc
import pytest

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "hack" / "cluster"))

from localcluster.csi import driver  # noqa: E402
from localcluster.csi.proto import (  # noqa: E402
    csi_pb2,
    csi_pb2_grpc,
    pluginregistration_pb2,
    pluginregistration_pb2_grpc,
)

MIB = 1 << 20
NODE = "node-a"
SANITY_TIMEOUT = 600


@pytest.fixture(scope="module")
def csi_bin() -> Path:
    """The cached CSI components (built from their Go modules the first time: a few minutes)."""
    result = subprocess.run(
        [str(REPO / "hack" / "cluster" / "build-csi")], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return Path(result.stdout.strip().splitlines()[-1])


@dataclass
class Driver:
    socket: Path
    data: Path
    registry: Path
    log: Path
    channel: grpc.Channel

    @property
    def controller(self) -> csi_pb2_grpc.ControllerStub:
        return csi_pb2_grpc.ControllerStub(self.channel)

    @property
    def node(self) -> csi_pb2_grpc.NodeStub:
        return csi_pb2_grpc.NodeStub(self.channel)


def _leftovers(root: Path) -> list[str]:
    mounts = [line.split()[4] for line in Path("/proc/self/mountinfo").read_text().splitlines()]
    left = [f"mount {point}" for point in mounts if point.startswith(str(root))]
    loops = subprocess.run(["losetup", "-a"], capture_output=True, text=True, check=True).stdout
    left += [f"loop {line}" for line in loops.splitlines() if str(root) in line]
    return left


@pytest.fixture
def csi_driver(tmp_path: Path) -> Iterator[Driver]:
    """The driver serving Identity, Controller and Node on one socket, with kubelet registration."""
    # Unix socket paths are short (108 bytes): the sockets live in a directory of their own under /tmp.
    sockets = Path(tempfile.mkdtemp(prefix="csi-", dir="/tmp"))
    socket, data, registry = sockets / "csi.sock", tmp_path / "data", sockets / "registry"
    log = tmp_path / "driver.log"
    argv = [
        sys.executable, "-m", "localcluster.csi", f"--endpoint={socket}", f"--controller={NODE}={data}",
        f"--node={NODE}", f"--data-dir={data}", f"--registration-dir={registry}",
    ]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(REPO / "hack" / "cluster")}
    with log.open("wb") as output:
        process = subprocess.Popen(argv, stdout=output, stderr=subprocess.STDOUT, env=env)
    channel = grpc.insecure_channel(f"unix://{socket}")
    try:
        grpc.channel_ready_future(channel).result(timeout=20)
        yield Driver(socket, data, registry, log, channel)
    finally:
        channel.close()
        process.terminate()
        assert process.wait(timeout=20) == 0, log.read_text()[-3000:]
        assert not socket.exists()
        shutil.rmtree(sockets)
    assert _leftovers(tmp_path) == []


def _sanity(csi_bin: Path, driver: Driver, tmp_path: Path, access_type: str) -> tuple[int, int, str]:
    result = subprocess.run(
        [
            str(csi_bin / "csi-sanity"),
            f"--csi.endpoint={driver.socket}",
            f"--csi.mountdir={tmp_path / 'mount'}",
            f"--csi.stagingdir={tmp_path / 'staging'}",
            f"--csi.testvolumeaccesstype={access_type}",
            "--ginkgo.no-color",
        ],
        capture_output=True,
        text=True,
        timeout=SANITY_TIMEOUT,
        check=False,
    )
    summary = re.search(r"(\d+) Passed \| (\d+) Failed", result.stdout)
    assert summary, result.stdout[-5000:] + result.stderr[-2000:]
    assert result.returncode == 0, result.stdout[-5000:]
    return int(summary[1]), int(summary[2]), result.stdout


@pytest.mark.parametrize("access_type", ["mount", "block"])
def test_csi_sanity_passes(csi_bin: Path, csi_driver: Driver, tmp_path: Path, access_type: str) -> None:
    passed, failed, output = _sanity(csi_bin, csi_driver, tmp_path, access_type)
    assert failed == 0, output[-5000:]
    # Identity, CreateVolume/DeleteVolume, snapshots (create, delete, list with paging, get), cloning,
    # expansion on controller and node, publish/unpublish, volume stats: everything the driver offers.
    assert passed >= 61, output[-5000:]
    # Nothing of the suite's volumes and snapshots is left in the data directory.
    assert list((csi_driver.data / "volumes").iterdir()) == []
    assert list((csi_driver.data / "snapshots").iterdir()) == []


def _capability(block: bool) -> csi_pb2.VolumeCapability:
    mode = csi_pb2.VolumeCapability.AccessMode(mode=csi_pb2.VolumeCapability.AccessMode.SINGLE_NODE_WRITER)
    if block:
        return csi_pb2.VolumeCapability(block=csi_pb2.VolumeCapability.BlockVolume(), access_mode=mode)
    return csi_pb2.VolumeCapability(mount=csi_pb2.VolumeCapability.MountVolume(), access_mode=mode)


def _create(
    csi: Driver, name: str, size: int, *, block: bool, source: csi_pb2.VolumeContentSource | None = None
) -> csi_pb2.Volume:
    request = csi_pb2.CreateVolumeRequest(
        name=name,
        capacity_range=csi_pb2.CapacityRange(required_bytes=size),
        volume_capabilities=[_capability(block)],
        accessibility_requirements=csi_pb2.TopologyRequirement(
            preferred=[csi_pb2.Topology(segments={driver.TOPOLOGY_KEY: NODE})]
        ),
    )
    if source is not None:
        request.volume_content_source.CopyFrom(source)
    return csi.controller.CreateVolume(request).volume


def _publish(csi: Driver, volume_id: str, target: Path, *, block: bool) -> None:
    csi.node.NodePublishVolume(
        csi_pb2.NodePublishVolumeRequest(
            volume_id=volume_id, target_path=str(target), volume_capability=_capability(block)
        )
    )


def _unpublish(csi: Driver, volume_id: str, target: Path) -> None:
    csi.node.NodeUnpublishVolume(
        csi_pb2.NodeUnpublishVolumeRequest(volume_id=volume_id, target_path=str(target))
    )


def _snapshot_source(snapshot_id: str) -> csi_pb2.VolumeContentSource:
    return csi_pb2.VolumeContentSource(
        snapshot=csi_pb2.VolumeContentSource.SnapshotSource(snapshot_id=snapshot_id)
    )


def test_a_filesystem_volume_keeps_its_data_through_snapshot_restore_and_clone(
    csi_driver: Driver, tmp_path: Path
) -> None:
    volume = _create(csi_driver, "fs", 64 * MIB, block=False)
    assert volume.capacity_bytes == 64 * MIB
    assert list(volume.accessible_topology) == [csi_pb2.Topology(segments={driver.TOPOLOGY_KEY: NODE})]
    target = tmp_path / "pod" / "mount"
    target.parent.mkdir()
    _publish(csi_driver, volume.volume_id, target, block=False)
    (target / "disk.img").write_bytes(b"first")
    snapshot = csi_driver.controller.CreateSnapshot(
        csi_pb2.CreateSnapshotRequest(name="snap", source_volume_id=volume.volume_id)
    ).snapshot
    assert snapshot.ready_to_use
    assert snapshot.size_bytes == 64 * MIB
    (target / "disk.img").write_bytes(b"second")
    stats = csi_driver.node.NodeGetVolumeStats(
        csi_pb2.NodeGetVolumeStatsRequest(volume_id=volume.volume_id, volume_path=str(target))
    )
    (in_bytes,) = [usage for usage in stats.usage if usage.unit == csi_pb2.VolumeUsage.BYTES]
    assert in_bytes.total == 64 * MIB
    assert 0 < in_bytes.used < 64 * MIB

    restored = _create(
        csi_driver, "restored", 64 * MIB, block=False, source=_snapshot_source(snapshot.snapshot_id)
    )
    clone_source = csi_pb2.VolumeContentSource(
        volume=csi_pb2.VolumeContentSource.VolumeSource(volume_id=volume.volume_id)
    )
    clone = _create(csi_driver, "clone", 64 * MIB, block=False, source=clone_source)
    for made, expected in ((restored, b"first"), (clone, b"second")):
        other = tmp_path / f"pod-{made.volume_id}"
        _publish(csi_driver, made.volume_id, other, block=False)
        assert (other / "disk.img").read_bytes() == expected
        _unpublish(csi_driver, made.volume_id, other)
        assert not other.exists()

    expanded = csi_driver.controller.ControllerExpandVolume(
        csi_pb2.ControllerExpandVolumeRequest(
            volume_id=volume.volume_id, capacity_range=csi_pb2.CapacityRange(required_bytes=128 * MIB)
        )
    )
    assert (expanded.capacity_bytes, expanded.node_expansion_required) == (128 * MIB, False)
    _unpublish(csi_driver, volume.volume_id, target)
    assert not target.exists()
    for made in (volume, restored, clone):
        csi_driver.controller.DeleteVolume(csi_pb2.DeleteVolumeRequest(volume_id=made.volume_id))
    csi_driver.controller.DeleteSnapshot(csi_pb2.DeleteSnapshotRequest(snapshot_id=snapshot.snapshot_id))
    assert list((csi_driver.data / "volumes").iterdir()) == []


def _device_size(path: Path) -> int:
    return int(
        subprocess.run(
            ["blockdev", "--getsize64", str(path)], capture_output=True, text=True, check=True
        ).stdout
    )


def test_a_block_volume_is_a_device_that_grows_online_and_snapshots(
    csi_driver: Driver, tmp_path: Path
) -> None:
    volume = _create(csi_driver, "blk", 8 * MIB, block=True)
    target = tmp_path / "publish" / "pod-uid"
    target.parent.mkdir()
    _publish(csi_driver, volume.volume_id, target, block=True)
    assert target.is_block_device()
    assert _device_size(target) == 8 * MIB
    with target.open("r+b") as device:
        device.write(b"block data")
    snapshot = csi_driver.controller.CreateSnapshot(
        csi_pb2.CreateSnapshotRequest(name="blk-snap", source_volume_id=volume.volume_id)
    ).snapshot

    expanded = csi_driver.controller.ControllerExpandVolume(
        csi_pb2.ControllerExpandVolumeRequest(
            volume_id=volume.volume_id, capacity_range=csi_pb2.CapacityRange(required_bytes=16 * MIB)
        )
    )
    assert (expanded.capacity_bytes, expanded.node_expansion_required) == (16 * MIB, True)
    node_expanded = csi_driver.node.NodeExpandVolume(
        csi_pb2.NodeExpandVolumeRequest(volume_id=volume.volume_id, volume_path=str(target))
    )
    assert node_expanded.capacity_bytes == 16 * MIB
    assert _device_size(target) == 16 * MIB

    # A restore may be larger than the snapshot: the device has the new size and the old data.
    restored = _create(
        csi_driver, "blk-restored", 32 * MIB, block=True, source=_snapshot_source(snapshot.snapshot_id)
    )
    other = tmp_path / "publish" / "other-pod"
    _publish(csi_driver, restored.volume_id, other, block=True)
    assert _device_size(other) == 32 * MIB
    assert other.read_bytes()[:10] == b"block data"
    # A restore smaller than the snapshot is refused.
    with pytest.raises(grpc.RpcError) as refused:
        _create(csi_driver, "too-small", 4 * MIB, block=True, source=_snapshot_source(snapshot.snapshot_id))
    assert refused.value.code() == grpc.StatusCode.OUT_OF_RANGE
    # An attached volume is not deleted under its user.
    with pytest.raises(grpc.RpcError) as busy:
        csi_driver.controller.DeleteVolume(csi_pb2.DeleteVolumeRequest(volume_id=volume.volume_id))
    assert busy.value.code() == grpc.StatusCode.FAILED_PRECONDITION

    for made, path in ((volume, target), (restored, other)):
        _unpublish(csi_driver, made.volume_id, path)
        assert not path.exists()
        csi_driver.controller.DeleteVolume(csi_pb2.DeleteVolumeRequest(volume_id=made.volume_id))
    csi_driver.controller.DeleteSnapshot(csi_pb2.DeleteSnapshotRequest(snapshot_id=snapshot.snapshot_id))
    assert _leftovers(tmp_path) == []


def test_the_registration_service_names_the_driver_and_its_endpoint(csi_driver: Driver) -> None:
    socket = csi_driver.registry / f"{driver.DRIVER_NAME}-reg.sock"
    with grpc.insecure_channel(f"unix://{socket}") as channel:
        registration = pluginregistration_pb2_grpc.RegistrationStub(channel)
        info = registration.GetInfo(pluginregistration_pb2.InfoRequest(), timeout=10)
        assert (info.type, info.name, info.endpoint) == (
            "CSIPlugin",
            driver.DRIVER_NAME,
            str(csi_driver.socket),
        )
        assert list(info.supported_versions) == ["1.0.0"]
        registration.NotifyRegistrationStatus(
            pluginregistration_pb2.RegistrationStatus(plugin_registered=True)
        )
    deadline = time.monotonic() + 10
    while "registered" not in csi_driver.log.read_text():
        assert time.monotonic() < deadline
        time.sleep(0.05)


def _code(call: object) -> grpc.StatusCode:
    assert isinstance(call, grpc.RpcError)
    code = call.code()
    assert isinstance(code, grpc.StatusCode)
    return code


def test_no_request_reaches_outside_the_data_directory(csi_driver: Driver, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    secret = outside / "secret"
    secret.write_bytes(b"host file")
    controller = csi_driver.controller

    # IDs that are paths name nothing: not found, and deleting them is a no-op.
    for volume_id in ("../../outside", "/etc", "..", "a/../../b"):
        with pytest.raises(grpc.RpcError) as error:
            controller.ValidateVolumeCapabilities(
                csi_pb2.ValidateVolumeCapabilitiesRequest(
                    volume_id=volume_id, volume_capabilities=[_capability(False)]
                )
            )
        assert _code(error.value) == grpc.StatusCode.NOT_FOUND
        controller.DeleteVolume(csi_pb2.DeleteVolumeRequest(volume_id=volume_id))
        controller.DeleteSnapshot(csi_pb2.DeleteSnapshotRequest(snapshot_id=volume_id))
    assert secret.read_bytes() == b"host file"

    # A pod's symlink inside its volume is copied and removed as a link, never followed.
    volume = _create(csi_driver, "with-link", 16 * MIB, block=False)
    data = csi_driver.data / "volumes" / volume.volume_id
    (data / "escape").symlink_to(outside)
    (data / "file-link").symlink_to(secret)
    snapshot = controller.CreateSnapshot(
        csi_pb2.CreateSnapshotRequest(name="with-link", source_volume_id=volume.volume_id)
    ).snapshot
    copied = csi_driver.data / "snapshots" / snapshot.snapshot_id
    assert (copied / "escape").is_symlink()
    assert (copied / "file-link").is_symlink()
    controller.DeleteSnapshot(csi_pb2.DeleteSnapshotRequest(snapshot_id=snapshot.snapshot_id))
    controller.DeleteVolume(csi_pb2.DeleteVolumeRequest(volume_id=volume.volume_id))
    assert secret.read_bytes() == b"host file"
    assert sorted(p.name for p in outside.iterdir()) == ["secret"]

    # A volume's data replaced by a symlink out of the data directory is refused everywhere.
    block = _create(csi_driver, "swapped", 8 * MIB, block=True)
    image = csi_driver.data / "volumes" / f"{block.volume_id}.img"
    image.unlink()
    image.symlink_to(secret)
    target = tmp_path / "target"
    with pytest.raises(grpc.RpcError) as error:
        _publish(csi_driver, block.volume_id, target, block=True)
    assert _code(error.value) == grpc.StatusCode.INTERNAL
    with pytest.raises(grpc.RpcError) as error:
        controller.CreateSnapshot(
            csi_pb2.CreateSnapshotRequest(name="swapped", source_volume_id=block.volume_id)
        )
    assert _code(error.value) == grpc.StatusCode.INTERNAL
    with pytest.raises(grpc.RpcError) as error:
        controller.ControllerExpandVolume(
            csi_pb2.ControllerExpandVolumeRequest(
                volume_id=block.volume_id, capacity_range=csi_pb2.CapacityRange(required_bytes=64 * MIB)
            )
        )
    assert _code(error.value) == grpc.StatusCode.INTERNAL
    assert secret.read_bytes() == b"host file"  # not grown, not attached
    assert not target.exists()
    controller.DeleteVolume(csi_pb2.DeleteVolumeRequest(volume_id=block.volume_id))
    assert secret.read_bytes() == b"host file"

    # A target path that is a symlink is refused: nothing is mounted where it points.
    fs = _create(csi_driver, "fs", 16 * MIB, block=False)
    link = tmp_path / "link-target"
    link.symlink_to(outside)
    with pytest.raises(grpc.RpcError) as error:
        _publish(csi_driver, fs.volume_id, link, block=False)
    assert _code(error.value) == grpc.StatusCode.INVALID_ARGUMENT
    assert sorted(p.name for p in outside.iterdir()) == ["secret"]
    controller.DeleteVolume(csi_pb2.DeleteVolumeRequest(volume_id=fs.volume_id))
