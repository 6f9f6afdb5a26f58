"""The driver's volumes and snapshots on disk, one data directory per node and a shared one.

A node's data directory holds its node-local volumes (of ReadWriteOnce claims); the shared data directory,
which every node sees at the same path, holds the volumes made for multi-node access (of ReadWriteMany and
ReadOnlyMany claims, recorded with the node :data:`SHARED`) and their snapshots. A data directory holds
``volumes/<id>.json`` (what the volume is) beside ``volumes/<id>/`` (a Filesystem volume) or
``volumes/<id>.img`` (a Block volume's sparse file), and ``snapshots/<id>.json`` beside a copy of the
volume's directory or file. IDs are 32 lowercase hex digits made here; anything else given as an ID
names no volume, so no request can reach a path outside the data directory. A pod can write into its
volume's directory (symlinks included) but never into ``volumes/`` itself; every entry the driver opens
there is checked not to be a symlink (``O_NOFOLLOW``, ``lstat``), and copies and removals never follow the
links inside a volume.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import threading
import time
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path

import grpc

MIB = 1 << 20
GIB = 1 << 30
# A volume with no requested size; the largest one (Block files are sparse, directories have no quota).
DEFAULT_CAPACITY = GIB
MAX_CAPACITY = 1 << 40
ID_PATTERN = re.compile(r"^[0-9a-f]{32}$")
# CSI names (the external-provisioner's pvc-<uid>, snapshot-<uid>) are at most 128 bytes.
MAX_NAME = 128
# The node of a volume (and its snapshots) in the shared data directory: no node's, every node's.
SHARED = ""


class CsiError(Exception):
    """A request the driver refuses, with the gRPC status code the CSI spec gives for the reason."""

    def __init__(self, code: grpc.StatusCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True)
class Volume:
    id: str
    name: str
    node: str
    capacity: int
    block: bool
    # "" or "snapshot:<id>" / "volume:<id>": what the volume was made from.
    source: str = ""

    @property
    def shared(self) -> bool:
        return self.node == SHARED


@dataclass(frozen=True)
class Snapshot:
    id: str
    name: str
    node: str
    source_volume: str
    size: int
    block: bool
    created: float


def new_id() -> str:
    return uuid.uuid4().hex


def valid_id(value: str) -> bool:
    return bool(ID_PATTERN.fullmatch(value))


def round_capacity(required: int, limit: int) -> int:
    """The size of a new or expanded volume: ``required`` rounded up to MiB (a default if 0), within
    ``limit`` (0: none)."""
    if required < 0 or limit < 0:
        raise CsiError(grpc.StatusCode.INVALID_ARGUMENT, "negative capacity")
    if limit and required > limit:
        raise CsiError(grpc.StatusCode.INVALID_ARGUMENT, f"required_bytes {required} > limit_bytes {limit}")
    size = required or min(DEFAULT_CAPACITY, limit or DEFAULT_CAPACITY)
    size = -(-size // MIB) * MIB
    if limit and size > limit:
        size = limit  # a limit below the next MiB: exactly the limit (a multiple of 512 for Block)
    if size > MAX_CAPACITY:
        raise CsiError(grpc.StatusCode.OUT_OF_RANGE, f"{size} bytes is more than {MAX_CAPACITY}")
    if size % 512:
        raise CsiError(grpc.StatusCode.OUT_OF_RANGE, f"{size} bytes is not a multiple of 512")
    return size


def _lstat(path: Path) -> os.stat_result | None:
    try:
        return path.lstat()
    except FileNotFoundError:
        return None


def _read_json(path: Path) -> dict[str, object] | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except (FileNotFoundError, OSError):
        return None
    with os.fdopen(fd) as file:
        loaded = json.load(file)
    return loaded if isinstance(loaded, dict) else None


def _write_json(path: Path, content: dict[str, object]) -> None:
    partial = path.with_name(f".{path.name}.partial")
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "w") as file:
        json.dump(content, file)
    os.replace(partial, path)


def _run(*argv: str) -> str:
    result = subprocess.run(argv, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise CsiError(grpc.StatusCode.INTERNAL, f"{' '.join(argv)}: {result.stderr.strip()}")
    return result.stdout


def _remove(path: Path) -> None:
    """Removes a volume's or snapshot's data: a directory tree (rmtree never follows the links inside it) or
    a file (a symlink is removed itself, not its target)."""
    found = _lstat(path)
    if found is None:
        return
    if stat.S_ISDIR(found.st_mode):
        shutil.rmtree(path)
    else:
        path.unlink()


def disk_usage(directory: Path) -> tuple[int, int]:
    """Bytes allocated and inodes used below ``directory``, links not followed."""
    used, inodes = 0, 0
    for root, dirs, files in os.walk(directory, followlinks=False):
        for name in dirs + files:
            try:
                used += os.lstat(os.path.join(root, name)).st_blocks * 512
            except FileNotFoundError:
                continue
            inodes += 1
    return used, inodes


class DataDir:
    """One node's data directory, or the shared one."""

    def __init__(self, path: Path) -> None:
        path.mkdir(parents=True, exist_ok=True)
        self.path = path.resolve()
        for sub in (self.volumes_dir, self.snapshots_dir):
            sub.mkdir(exist_ok=True)
            found = sub.lstat()
            if not stat.S_ISDIR(found.st_mode):
                raise RuntimeError(f"{sub} is not a directory")

    @property
    def volumes_dir(self) -> Path:
        return self.path / "volumes"

    @property
    def snapshots_dir(self) -> Path:
        return self.path / "snapshots"

    def volume_data(self, volume: Volume) -> Path:
        return self.volumes_dir / (f"{volume.id}.img" if volume.block else volume.id)

    def snapshot_data(self, snapshot: Snapshot) -> Path:
        return self.snapshots_dir / (f"{snapshot.id}.img" if snapshot.block else snapshot.id)

    def volume(self, volume_id: str) -> Volume | None:
        if not valid_id(volume_id):
            return None
        loaded = _read_json(self.volumes_dir / f"{volume_id}.json")
        return Volume(**loaded) if loaded is not None else None  # type: ignore[arg-type]

    def volumes(self) -> list[Volume]:
        found = (self.volume(p.stem) for p in self.volumes_dir.glob("*.json"))
        return [v for v in found if v is not None]

    def snapshot(self, snapshot_id: str) -> Snapshot | None:
        if not valid_id(snapshot_id):
            return None
        loaded = _read_json(self.snapshots_dir / f"{snapshot_id}.json")
        return Snapshot(**loaded) if loaded is not None else None  # type: ignore[arg-type]

    def snapshots(self) -> list[Snapshot]:
        found = (self.snapshot(p.stem) for p in self.snapshots_dir.glob("*.json"))
        return [s for s in found if s is not None]

    def save_volume(self, volume: Volume) -> None:
        _write_json(self.volumes_dir / f"{volume.id}.json", asdict(volume))

    def save_snapshot(self, snapshot: Snapshot) -> None:
        _write_json(self.snapshots_dir / f"{snapshot.id}.json", asdict(snapshot))

    def checked_data(self, path: Path, *, block: bool) -> Path:
        """``path`` (a volume's or snapshot's data) if it is what it should be: a directory or a regular file,
        never a symlink."""
        found = _lstat(path)
        wanted = stat.S_ISREG if block else stat.S_ISDIR
        if found is None or not wanted(found.st_mode):
            raise CsiError(
                grpc.StatusCode.INTERNAL, f"{path} is missing or not a {'file' if block else 'dir'}"
            )
        return path


def _make_data(path: Path, *, block: bool, size: int) -> None:
    if block:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            os.ftruncate(fd, size)
        finally:
            os.close(fd)
    else:
        path.mkdir(mode=0o777)
        path.chmod(0o777)  # any pod user may write (the kubelet applies a pod's fsGroup on top)


def _copy_data(source: Path, target: Path, *, block: bool) -> None:
    """Copies a directory tree as it is (links as links, special files as special files, owners and
    modes) or a sparse file."""
    if block:
        _run("cp", "--no-dereference", "--sparse=always", "--reflink=auto", str(source), str(target))
    else:
        _run("cp", "-a", "--reflink=auto", "--no-target-directory", str(source), str(target))


def grow_file(path: Path, size: int) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        if os.fstat(fd).st_size < size:
            os.ftruncate(fd, size)
    finally:
        os.close(fd)


def loop_devices(backing_file: Path) -> list[str]:
    """The loop devices attached to ``backing_file``."""
    result = subprocess.run(["losetup", "-j", str(backing_file)], capture_output=True, text=True, check=False)
    return [line.split(":", 1)[0] for line in result.stdout.splitlines() if line.startswith("/dev/")]


class Store:
    """The controller's view: every node's data directory, by node name, and the shared one if given. One
    request at a time."""

    def __init__(self, nodes: dict[str, Path], shared: Path | None = None) -> None:
        if not nodes:
            raise ValueError("a store needs at least one node's data directory")
        self.nodes = {name: DataDir(path) for name, path in nodes.items()}
        self.shared = DataDir(shared) if shared is not None else None
        if self.shared is not None and self.shared.path in {data.path for data in self.nodes.values()}:
            raise ValueError(f"the shared data directory {shared} is also a node's")
        self.lock = threading.Lock()

    def _data_dirs(self) -> list[DataDir]:
        return [*self.nodes.values(), *([self.shared] if self.shared is not None else [])]

    def data_dir(self, node: str) -> DataDir:
        """Where the volumes of ``node`` (one of ours, or :data:`SHARED`) live."""
        if node != SHARED:
            return self.nodes[node]
        if self.shared is None:
            raise CsiError(grpc.StatusCode.INVALID_ARGUMENT, "the driver has no shared data directory")
        return self.shared

    def find_volume(self, volume_id: str) -> tuple[DataDir, Volume] | None:
        for data in self._data_dirs():
            if (volume := data.volume(volume_id)) is not None:
                return data, volume
        return None

    def find_snapshot(self, snapshot_id: str) -> tuple[DataDir, Snapshot] | None:
        for data in self._data_dirs():
            if (snapshot := data.snapshot(snapshot_id)) is not None:
                return data, snapshot
        return None

    def all_volumes(self) -> list[Volume]:
        return [volume for data in self._data_dirs() for volume in data.volumes()]

    def all_snapshots(self) -> list[Snapshot]:
        return [snapshot for data in self._data_dirs() for snapshot in data.snapshots()]

    def create_volume(
        self, name: str, node: str, capacity: int, *, block: bool, source: str = ""
    ) -> tuple[Volume, bool]:
        """The volume called ``name`` on ``node`` (:data:`SHARED`: in the shared data directory), made now or
        earlier with the same parameters; and whether it is new."""
        for existing in self.all_volumes():
            if existing.name == name:
                asked = (capacity, block, source, node == SHARED)
                if (existing.capacity, existing.block, existing.source, existing.shared) != asked:
                    raise CsiError(
                        grpc.StatusCode.ALREADY_EXISTS, f"volume {name} exists with other parameters"
                    )
                return existing, False
        data = self.data_dir(node)
        volume = Volume(id=new_id(), name=name, node=node, capacity=capacity, block=block, source=source)
        target = data.volume_data(volume)
        try:
            kind, _, source_id = source.partition(":")
            if kind == "snapshot":
                self._restore(self._snapshot(source_id), target, volume)
            elif kind == "volume":
                self._clone(self._volume(source_id), target, volume)
            else:
                _make_data(target, block=block, size=capacity)
            data.save_volume(volume)
        except BaseException:
            _remove(target)
            raise
        return volume, True

    def _volume(self, volume_id: str) -> tuple[DataDir, Volume]:
        found = self.find_volume(volume_id)
        if found is None:
            raise CsiError(grpc.StatusCode.NOT_FOUND, f"volume {volume_id} not found")
        return found

    def _snapshot(self, snapshot_id: str) -> tuple[DataDir, Snapshot]:
        found = self.find_snapshot(snapshot_id)
        if found is None:
            raise CsiError(grpc.StatusCode.NOT_FOUND, f"snapshot {snapshot_id} not found")
        return found

    @staticmethod
    def _check_source(kind: str, source_id: str, block: bool, size: int, volume: Volume) -> None:
        if block != volume.block:
            raise CsiError(
                grpc.StatusCode.INVALID_ARGUMENT,
                f"{kind} {source_id} and the new volume differ in volume mode",
            )
        if size > volume.capacity:
            raise CsiError(
                grpc.StatusCode.OUT_OF_RANGE, f"{kind} {source_id} ({size} bytes) is larger than the volume"
            )

    def _restore(self, found: tuple[DataDir, Snapshot], target: Path, volume: Volume) -> None:
        data, snapshot = found
        self._check_source("snapshot", snapshot.id, snapshot.block, snapshot.size, volume)
        _copy_data(
            data.checked_data(data.snapshot_data(snapshot), block=volume.block), target, block=volume.block
        )
        if volume.block:
            grow_file(target, volume.capacity)

    def _clone(self, found: tuple[DataDir, Volume], target: Path, volume: Volume) -> None:
        data, source = found
        self._check_source("volume", source.id, source.block, source.capacity, volume)
        _copy_data(
            data.checked_data(data.volume_data(source), block=volume.block), target, block=volume.block
        )
        if volume.block:
            grow_file(target, volume.capacity)

    def delete_volume(self, volume_id: str) -> None:
        found = self.find_volume(volume_id)
        if found is None:
            return  # already gone (or never was): success, as the spec asks
        data, volume = found
        if volume.block:
            self._release_loop_devices(data, volume)
        (data.volumes_dir / f"{volume.id}.json").unlink()
        _remove(data.volume_data(volume))

    @staticmethod
    def _release_loop_devices(data: DataDir, volume: Volume) -> None:
        """A node-local volume's loop device is detached by its node's last unpublish: one still there is in
        use, and the volume is not deleted. A shared volume's is left attached by the nodes (none can tell
        whether another still uses it), so the volume's deletion detaches it: the kernel defers that for a
        device still open until its last user closes it (Kubernetes deletes a volume once no pod uses it)."""
        devices = loop_devices(data.volume_data(volume))
        if devices and not volume.shared:
            raise CsiError(grpc.StatusCode.FAILED_PRECONDITION, f"volume {volume.id} is still attached")
        for device in devices:
            _run("losetup", "--detach", device)

    def expand_volume(self, volume_id: str, capacity: int) -> Volume:
        data, volume = self._volume(volume_id)
        if capacity <= volume.capacity:
            return volume  # never shrinks; an expansion asked again is done already
        if volume.block:
            grow_file(data.checked_data(data.volume_data(volume), block=True), capacity)
        expanded = Volume(**{**asdict(volume), "capacity": capacity})
        data.save_volume(expanded)
        return expanded

    def create_snapshot(self, name: str, source_volume: str) -> tuple[Snapshot, bool]:
        for existing in self.all_snapshots():
            if existing.name == name:
                if existing.source_volume != source_volume:
                    raise CsiError(
                        grpc.StatusCode.ALREADY_EXISTS, f"snapshot {name} exists for another volume"
                    )
                return existing, False
        data, volume = self._volume(source_volume)
        snapshot = Snapshot(
            id=new_id(),
            name=name,
            node=volume.node,
            source_volume=volume.id,
            size=volume.capacity,
            block=volume.block,
            created=time.time(),
        )
        target = data.snapshot_data(snapshot)
        try:
            _copy_data(
                data.checked_data(data.volume_data(volume), block=volume.block), target, block=volume.block
            )
            data.save_snapshot(snapshot)
        except BaseException:
            _remove(target)
            raise
        return snapshot, True

    def delete_snapshot(self, snapshot_id: str) -> None:
        found = self.find_snapshot(snapshot_id)
        if found is None:
            return
        data, snapshot = found
        (data.snapshots_dir / f"{snapshot.id}.json").unlink()
        _remove(data.snapshot_data(snapshot))
