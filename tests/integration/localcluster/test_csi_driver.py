"""The local cluster's hostpath CSI driver for real (root, real mounts and loop devices), on a unix socket in
a temporary directory: the CSI community's sanity suite (csi-sanity, built from its Go module by
hack/cluster/build-csi and cached) with Filesystem and with Block volumes, then what the suite does not
look at: data surviving snapshot, restore, clone and expansion, the kubelet registration service,
requests that would lead out of the data directory through a symlink, and multi-node volumes: a second
node's plugin (another process, another node ID, the same shared data directory) publishing them at the same
time as the first."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
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
NODE, OTHER_NODE = "node-a", "node-b"
SANITY_TIMEOUT = 600
AccessMode = csi_pb2.VolumeCapability.AccessMode


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
    shared: Path
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


def _driver_argv(*args: str) -> list[str]:
    return [sys.executable, "-m", "localcluster.csi", *args]


_ENV = {**os.environ, "PYTHONPATH": str(REPO / "hack" / "cluster")}


@contextmanager
def _running(tmp_path: Path, name: str, data: Path, *args: str) -> Iterator[Driver]:
    """A driver process ``name`` with ``args`` besides its endpoint and registration directory."""
    # Unix socket paths are short (108 bytes): the sockets live in a directory of their own under /tmp.
    sockets = Path(tempfile.mkdtemp(prefix="csi-", dir="/tmp"))
    socket, registry, log = sockets / "csi.sock", sockets / "registry", tmp_path / f"{name}.log"
    argv = _driver_argv(f"--endpoint={socket}", f"--registration-dir={registry}", *args)
    with log.open("wb") as output:
        process = subprocess.Popen(argv, stdout=output, stderr=subprocess.STDOUT, env=_ENV)
    channel = grpc.insecure_channel(f"unix://{socket}")
    try:
        grpc.channel_ready_future(channel).result(timeout=20)
        yield Driver(socket, data, tmp_path / "shared", registry, log, channel)
    finally:
        channel.close()
        process.terminate()
        assert process.wait(timeout=20) == 0, log.read_text()[-3000:]
        assert not socket.exists()
        shutil.rmtree(sockets)


@pytest.fixture
def csi_driver(tmp_path: Path) -> Iterator[Driver]:
    """The driver serving Identity, Controller (over two nodes and the shared data directory) and node A's
    Node service on one socket, with kubelet registration."""
    data, other, shared = tmp_path / "data", tmp_path / "data-b", tmp_path / "shared"
    args = (
        f"--controller={NODE}={data}", f"--controller={OTHER_NODE}={other}", f"--shared-dir={shared}",
        f"--node={NODE}", f"--data-dir={data}",
    )  # fmt: skip
    with _running(tmp_path, "driver", data, *args) as driver:
        yield driver
    assert _leftovers(tmp_path) == []


@pytest.fixture
def other_node(tmp_path: Path, csi_driver: Driver) -> Iterator[Driver]:
    """Node B's plugin: the Node service only, over B's data directory and the same shared one."""
    data = tmp_path / "data-b"
    args = (f"--node={OTHER_NODE}", f"--data-dir={data}", f"--shared-dir={csi_driver.shared}")
    with _running(tmp_path, "node-b", data, *args) as driver:
        yield driver


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
    # Nothing of the suite's volumes and snapshots is left in the data directories.
    for data in (csi_driver.data, csi_driver.shared):
        assert list((data / "volumes").iterdir()) == []
        assert list((data / "snapshots").iterdir()) == []


def _capability(block: bool, mode: int = AccessMode.SINGLE_NODE_WRITER) -> csi_pb2.VolumeCapability:
    access = AccessMode(mode=mode)  # type: ignore[arg-type]
    if block:
        return csi_pb2.VolumeCapability(block=csi_pb2.VolumeCapability.BlockVolume(), access_mode=access)
    return csi_pb2.VolumeCapability(mount=csi_pb2.VolumeCapability.MountVolume(), access_mode=access)


def _create(
    csi: Driver,
    name: str,
    size: int,
    *,
    block: bool,
    source: csi_pb2.VolumeContentSource | None = None,
    mode: int = AccessMode.SINGLE_NODE_WRITER,
    node: str = NODE,
) -> csi_pb2.Volume:
    """A volume asked for as the provisioner asks with strict topology: only ``node`` (the first pod's)."""
    only = [csi_pb2.Topology(segments={driver.TOPOLOGY_KEY: node})]
    request = csi_pb2.CreateVolumeRequest(
        name=name,
        capacity_range=csi_pb2.CapacityRange(required_bytes=size),
        volume_capabilities=[_capability(block, mode)],
        accessibility_requirements=csi_pb2.TopologyRequirement(requisite=only, preferred=only),
    )
    if source is not None:
        request.volume_content_source.CopyFrom(source)
    return csi.controller.CreateVolume(request).volume


def _publish(
    csi: Driver, volume_id: str, target: Path, *, block: bool, mode: int = AccessMode.SINGLE_NODE_WRITER
) -> None:
    csi.node.NodePublishVolume(
        csi_pb2.NodePublishVolumeRequest(
            volume_id=volume_id, target_path=str(target), volume_capability=_capability(block, mode)
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


def _all_nodes() -> list[csi_pb2.Topology]:
    return [csi_pb2.Topology(segments={driver.TOPOLOGY_KEY: node}) for node in (NODE, OTHER_NODE)]


def _confirmed(csi: Driver, volume_id: str, *, block: bool, mode: int) -> bool:
    response = csi.controller.ValidateVolumeCapabilities(
        csi_pb2.ValidateVolumeCapabilitiesRequest(
            volume_id=volume_id, volume_capabilities=[_capability(block, mode)]
        )
    )
    return response.HasField("confirmed")


def _delete(csi: Driver, *volumes: csi_pb2.Volume) -> None:
    for volume in volumes:
        csi.controller.DeleteVolume(csi_pb2.DeleteVolumeRequest(volume_id=volume.volume_id))


def test_a_multi_node_filesystem_volume_is_shared_by_both_nodes(
    csi_driver: Driver, other_node: Driver, tmp_path: Path
) -> None:
    rwx = AccessMode.MULTI_NODE_MULTI_WRITER
    # Asked for node B only (strict topology), made in the shared directory, accessible from every node.
    volume = _create(csi_driver, "rwx", 32 * MIB, block=False, mode=rwx, node=OTHER_NODE)
    assert list(volume.accessible_topology) == _all_nodes()
    assert (csi_driver.shared / "volumes" / volume.volume_id).is_dir()
    # Asked for again: the same volume; with a single-node mode: another volume of that name exists.
    assert _create(csi_driver, "rwx", 32 * MIB, block=False, mode=rwx).volume_id == volume.volume_id
    with pytest.raises(grpc.RpcError) as error:
        _create(csi_driver, "rwx", 32 * MIB, block=False)
    assert _code(error.value) == grpc.StatusCode.ALREADY_EXISTS

    on_a, on_b = tmp_path / "pod-a" / "mount", tmp_path / "pod-b" / "mount"
    _publish(csi_driver, volume.volume_id, on_a, block=False, mode=rwx)
    _publish(other_node, volume.volume_id, on_b, block=False, mode=rwx)
    (on_a / "from-a").write_bytes(b"written on A")
    (on_b / "from-b").write_bytes(b"written on B")
    assert (on_b / "from-a").read_bytes() == b"written on A"
    assert (on_a / "from-b").read_bytes() == b"written on B"

    # Only a shared volume takes multi-node modes; a node-local one is its node's alone.
    local = _create(csi_driver, "rwo", 16 * MIB, block=False)
    for mode in (AccessMode.MULTI_NODE_MULTI_WRITER, AccessMode.MULTI_NODE_READER_ONLY):
        assert _confirmed(csi_driver, volume.volume_id, block=False, mode=mode)
        assert not _confirmed(csi_driver, local.volume_id, block=False, mode=mode)
    assert _confirmed(csi_driver, local.volume_id, block=False, mode=AccessMode.SINGLE_NODE_WRITER)
    with pytest.raises(grpc.RpcError) as error:
        _publish(csi_driver, local.volume_id, tmp_path / "local-rwx", block=False, mode=rwx)
    assert _code(error.value) == grpc.StatusCode.INVALID_ARGUMENT
    with pytest.raises(grpc.RpcError) as error:
        _publish(other_node, local.volume_id, tmp_path / "local-on-b", block=False)
    assert _code(error.value) == grpc.StatusCode.NOT_FOUND

    # A snapshot of the shared volume restores into a node-local volume or a shared one, as asked.
    snapshot = csi_driver.controller.CreateSnapshot(
        csi_pb2.CreateSnapshotRequest(name="rwx-snap", source_volume_id=volume.volume_id)
    ).snapshot
    assert (csi_driver.shared / "snapshots" / snapshot.snapshot_id).is_dir()
    source = _snapshot_source(snapshot.snapshot_id)
    on_b_only = _create(csi_driver, "restored-rwo", 32 * MIB, block=False, source=source, node=OTHER_NODE)
    assert list(on_b_only.accessible_topology) == _all_nodes()[1:]
    assert (tmp_path / "data-b" / "volumes" / on_b_only.volume_id / "from-a").read_bytes() == b"written on A"
    shared_copy = _create(csi_driver, "restored-rwx", 32 * MIB, block=False, source=source, mode=rwx)
    assert list(shared_copy.accessible_topology) == _all_nodes()
    copied = tmp_path / "pod-b" / "copy"
    _publish(other_node, shared_copy.volume_id, copied, block=False, mode=rwx)
    assert (copied / "from-b").read_bytes() == b"written on B"

    expanded = csi_driver.controller.ControllerExpandVolume(
        csi_pb2.ControllerExpandVolumeRequest(
            volume_id=volume.volume_id, capacity_range=csi_pb2.CapacityRange(required_bytes=64 * MIB)
        )
    )
    assert (expanded.capacity_bytes, expanded.node_expansion_required) == (64 * MIB, False)
    stats = other_node.node.NodeGetVolumeStats(
        csi_pb2.NodeGetVolumeStatsRequest(volume_id=volume.volume_id, volume_path=str(on_b))
    )
    assert [u.total for u in stats.usage if u.unit == csi_pb2.VolumeUsage.BYTES] == [64 * MIB]

    _unpublish(csi_driver, volume.volume_id, on_a)
    assert (on_b / "from-a").read_bytes() == b"written on A"  # B's publish is its own
    _unpublish(other_node, volume.volume_id, on_b)
    _unpublish(other_node, shared_copy.volume_id, copied)
    csi_driver.controller.DeleteSnapshot(csi_pb2.DeleteSnapshotRequest(snapshot_id=snapshot.snapshot_id))
    _delete(csi_driver, volume, local, on_b_only, shared_copy)
    for data in (csi_driver.shared, csi_driver.data, tmp_path / "data-b"):
        assert list((data / "volumes").iterdir()) == []
        assert list((data / "snapshots").iterdir()) == []


def _loop_devices_of(image: Path) -> list[str]:
    listed = subprocess.run(["losetup", "-j", str(image)], capture_output=True, text=True, check=True)
    return [line.split(":", 1)[0] for line in listed.stdout.splitlines()]


def test_a_multi_node_block_volume_is_one_device_on_both_nodes(
    csi_driver: Driver, other_node: Driver, tmp_path: Path
) -> None:
    rwx = AccessMode.MULTI_NODE_MULTI_WRITER
    volume = _create(csi_driver, "rwx-blk", 8 * MIB, block=True, mode=rwx)
    assert list(volume.accessible_topology) == _all_nodes()
    image = csi_driver.shared / "volumes" / f"{volume.volume_id}.img"
    on_a, on_b = tmp_path / "publish" / "pod-a", tmp_path / "publish" / "pod-b"
    _publish(csi_driver, volume.volume_id, on_a, block=True, mode=rwx)
    _publish(other_node, volume.volume_id, on_b, block=True, mode=rwx)
    assert on_a.stat().st_rdev == on_b.stat().st_rdev
    with on_a.open("r+b") as device:
        device.write(b"block data from A")
    assert on_b.read_bytes()[:17] == b"block data from A"

    # Grown by the controller, taken up by either node: the one device has the new size.
    csi_driver.controller.ControllerExpandVolume(
        csi_pb2.ControllerExpandVolumeRequest(
            volume_id=volume.volume_id, capacity_range=csi_pb2.CapacityRange(required_bytes=16 * MIB)
        )
    )
    other_node.node.NodeExpandVolume(
        csi_pb2.NodeExpandVolumeRequest(volume_id=volume.volume_id, volume_path=str(on_b))
    )
    assert _device_size(on_a) == 16 * MIB

    # A node cannot tell whether another still uses the device: unpublishing leaves it attached ...
    (device_name,) = _loop_devices_of(image)
    _unpublish(csi_driver, volume.volume_id, on_a)
    assert on_b.read_bytes()[:17] == b"block data from A"
    _unpublish(other_node, volume.volume_id, on_b)
    assert not on_a.exists()
    assert not on_b.exists()
    assert _loop_devices_of(image) == [device_name]
    # ... and publishing again uses it; deleting the volume detaches it.
    _publish(other_node, volume.volume_id, on_b, block=True, mode=rwx)
    assert _loop_devices_of(image) == [device_name]
    _unpublish(other_node, volume.volume_id, on_b)
    _delete(csi_driver, volume)
    assert not image.exists()
    assert _leftovers(tmp_path) == []


def test_multi_node_modes_need_a_shared_directory(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with _running(tmp_path, "no-shared", data, f"--controller={NODE}={data}") as plain:
        for mode in (AccessMode.MULTI_NODE_MULTI_WRITER, AccessMode.MULTI_NODE_READER_ONLY):
            with pytest.raises(grpc.RpcError) as error:
                _create(plain, "rwx", 16 * MIB, block=False, mode=mode)
            assert _code(error.value) == grpc.StatusCode.INVALID_ARGUMENT
            assert "shared data directory" in str(error.value.details())
        with pytest.raises(grpc.RpcError) as error:
            _create(plain, "unknown", 16 * MIB, block=False, mode=AccessMode.UNKNOWN)
        assert _code(error.value) == grpc.StatusCode.INVALID_ARGUMENT
        assert _create(plain, "rwo", 16 * MIB, block=False).volume_id
    assert not (tmp_path / "shared").exists()

    # A shared directory that is a node's own is refused at the start.
    for args in (
        [f"--controller={NODE}={data}", f"--shared-dir={data}"],
        [f"--node={NODE}", f"--data-dir={data}", f"--shared-dir={data}/."],
    ):
        started = subprocess.run(
            _driver_argv("--endpoint=/tmp/unused.sock", *args), capture_output=True, text=True, env=_ENV
        )
        assert started.returncode == 2, started.stderr
        assert "shared" in started.stderr.splitlines()[-1], started.stderr


def test_cluster_down_finds_a_loop_device_by_its_backing_file_and_its_device_node(tmp_path: Path) -> None:
    """What cluster-down reads of the real losetup: each device's backing file by path and by filesystem and
    inode, and a device node's identity in the same terms (how a loop device over it names it)."""
    from localcluster.csi import deploy

    image = tmp_path / "volume.img"
    image.write_bytes(b"\0" * MIB)
    device = subprocess.run(
        ["losetup", "--find", "--show", str(image)], capture_output=True, text=True, check=True
    ).stdout.strip()
    try:
        (found,) = [loop for loop in deploy._loop_devices() if loop.name == device]
        info = image.stat()
        assert found.backing == str(image)
        assert found.backing_file_id == (f"{os.major(info.st_dev)}:{os.minor(info.st_dev)}", info.st_ino)
        node = os.stat(device)
        assert deploy._device_node_id(device) == (
            f"{os.major(node.st_dev)}:{os.minor(node.st_dev)}",
            node.st_ino,
        )
    finally:
        subprocess.run(["losetup", "--detach", device], check=False)
