"""virt-handler's containerDisk mounts (KubeVirt's ``pkg/virt-handler/container-disk``).

Each containerDisk volume's container announces itself with ``disk_<N>.sock`` in the launcher pod's
``container-disks`` volume. Before the first sync the handler connects to that socket (never through a
link: :mod:`kubevirt.virt_handler.pod_sockets`), learns the container's process from the peer credentials,
checks that it is a process of that pod, and bind-mounts the image inside that process's root
read-only at ``disk_<N>.img`` in the same volume, where virt-launcher backs the guest's overlay with it.
A kernel-boot container's kernel and initrd go below ``kernel-boot/`` the same way.

What was mounted is recorded in a file per VMI before mounting, so a restarted handler still unmounts
it when the VMI goes away. The mounts themselves are made in the host's mount namespace by
:mod:`.hostmount`, in a process of its own.
"""

from __future__ import annotations

import json
import os
import posixpath
import subprocess
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubevirt import pod_paths
from kubevirt.container_disk import SOCKET_SUFFIX
from kubevirt.log import get_logger
from kubevirt.virt_handler.launcher_sockets import EMPTY_DIR
from kubevirt.virt_handler.pod_sockets import PodSocketError, pod_process
from kubevirt_api.view import JSON, VMIView

HOSTMOUNT_MODULE = "kubevirt.virt_handler.container_disk.hostmount"
HOSTMOUNT_TIMEOUT_SECONDS = 30.0


class ContainerDiskError(Exception):
    """A containerDisk could not be mounted or unmounted; the message names the volume."""


@dataclass(frozen=True)
class MountRequest:
    """One mount: the image (``path`` inside the container, empty for the one file in /disk) of the
    container announced by ``socket_name``, at ``target`` in the pod's container-disks volume."""

    socket_name: str
    path: str
    target: str
    volume: str


def mount_requests(vmi: Mapping[str, Any]) -> list[MountRequest]:
    """What a VMI needs mounted: one image per containerDisk volume, then a kernel-boot image's artifacts."""
    view = VMIView(vmi, error=ContainerDiskError)
    requests = [
        MountRequest(
            socket_name=f"disk_{index}{SOCKET_SUFFIX}",
            path=disk.string("path"),
            target=f"disk_{index}.img",
            volume=str(volume.get("name")),
        )
        for index, volume, disk in view.volume_sources("containerDisk")
    ]
    kernel_boot = view.spec.object("domain").object("firmware").object("kernelBoot").object("container")
    for field in ("kernelPath", "initrdPath"):
        if artifact := kernel_boot.string(field):
            requests.append(
                MountRequest(
                    socket_name=f"{pod_paths.KERNEL_BOOT}{SOCKET_SUFFIX}",
                    path=artifact,
                    target=f"{pod_paths.KERNEL_BOOT}/{posixpath.basename(artifact)}",
                    volume=pod_paths.KERNEL_BOOT_VOLUME,
                )
            )
    return requests


def run_hostmount(operation: str, request: JSON, namespace: str | None) -> bool:
    """Runs :mod:`.hostmount` for one request; returns whether it changed anything."""
    argv = [sys.executable, "-m", HOSTMOUNT_MODULE]
    if namespace is not None:
        argv += ["--namespace", namespace]
    argv += [operation, json.dumps(request)]
    result = subprocess.run(
        argv, capture_output=True, text=True, timeout=HOSTMOUNT_TIMEOUT_SECONDS, check=False
    )
    if result.returncode != 0:
        raise ContainerDiskError(result.stderr.strip()[-500:] or f"{operation} failed ({result.returncode})")
    return bool(json.loads(result.stdout)["changed"])


HostMount = Callable[[str, JSON, "str | None"], bool]


class Mounter:
    """Mounts and unmounts one node's containerDisks; records each VMI's mounts under ``state_dir``."""

    def __init__(
        self,
        *,
        pods_dir: Path,
        host_pods_dir: Path,
        state_dir: Path,
        namespace: str | None = "host",
        hostmount: HostMount = run_hostmount,
    ) -> None:
        self._pods_dir = pods_dir  # the kubelet's pods directory as this process sees it
        self._host_pods_dir = host_pods_dir  # and as the host's mount namespace sees it
        self._state_dir = state_dir
        self._namespace = namespace
        self._hostmount = hostmount
        self._log = get_logger()

    def _pod_uid(self, vmi: Mapping[str, Any], node: str) -> str | None:
        """The one active pod on this node whose container-disks volume exists."""
        found = [
            uid
            for uid, pod_node in sorted(((vmi.get("status") or {}).get("activePods") or {}).items())
            if pod_node == node and (self._volume_dir(uid)).is_dir()
        ]
        if len(found) > 1:
            raise ContainerDiskError(
                f"Found multiple pods active for vmi {_name(vmi)}: waiting on outdated pods"
            )
        return found[0] if found else None

    def _volume_dir(self, pod_uid: str) -> Path:
        return self._pods_dir.joinpath(*_volume_parts(pod_uid))

    def _disk_process(self, pod_uid: str, request: MountRequest) -> int:
        """The disk container's PID, from its socket in the pod's volume (checked to be the pod's)."""
        return pod_process(self._pods_dir, _volume_parts(pod_uid), request.socket_name, pod_uid)

    def mount(self, vmi: Mapping[str, Any], node: str) -> bool:
        """Mounts every image the VMI needs that is not mounted yet (recording them first), once every disk
        container of the VMI's pod answers on its socket; False, with nothing done, while one does not yet.
        Each socket is dialled once: the peer it answers from is the process whose root is mounted from."""
        requests = mount_requests(vmi)
        if not requests:
            return True
        uid = self._pod_uid(vmi, node)
        if uid is None:
            return False  # the pod's container-disks volume is not on this node yet
        pids = []
        for request in requests:
            try:
                pids.append(self._disk_process(uid, request))
            except PodSocketError as err:
                raise ContainerDiskError(f"containerDisk {request.volume}: {err}") from None
            except OSError:
                return False  # not listening yet
        self._record(vmi, uid, [request.target for request in requests])
        for request, pid in zip(requests, pids, strict=True):
            try:
                mounted = self._hostmount(
                    "mount",
                    {**self._target(uid, request.target), "pid": pid, "path": request.path},
                    self._namespace,
                )
            except ContainerDiskError as err:
                raise ContainerDiskError(f"failed to mount containerDisk {request.volume}: {err}") from None
            if mounted:
                self._log.info(
                    "containerDisk mounted", name=_name(vmi), volume=request.volume, target=request.target
                )
        return True

    def unmount(self, vmi_uid: str) -> None:
        """Unmounts what the record of ``vmi_uid`` lists, then drops the record."""
        record = self._read_record(vmi_uid)
        if record is None:
            return
        for target in record["targets"]:
            try:
                if self._hostmount("unmount", self._target(record["podUID"], target), self._namespace):
                    self._log.info("containerDisk unmounted", vmi_uid=vmi_uid, target=target)
            except ContainerDiskError as err:
                raise ContainerDiskError(f"failed to unmount {target}: {err}") from None
        self._record_path(vmi_uid).unlink(missing_ok=True)

    def _records(self) -> dict[str, JSON]:
        if not self._state_dir.is_dir():
            return {}
        found = {}
        for path in sorted(self._state_dir.glob("*.json")):
            try:
                record = json.loads(path.read_text())
            except (OSError, ValueError):
                continue
            if isinstance(record, dict):
                found[path.stem] = record
        return found

    def recorded(self, namespace: str, name: str) -> list[str]:
        """The UIDs of recorded VMIs called ``namespace/name`` (a deleted VMI is only known by its key)."""
        return [
            uid
            for uid, record in self._records().items()
            if record.get("namespace") == namespace and record.get("name") == name
        ]

    def recorded_keys(self) -> list[str]:
        """``namespace/name`` of every VMI with recorded mounts."""
        return sorted(
            {f"{record.get('namespace')}/{record.get('name')}" for record in self._records().values()}
        )

    def _target(self, pod_uid: str, name: str) -> JSON:
        return {"podsDir": str(self._host_pods_dir), "podUID": pod_uid, "name": name}

    def _record_path(self, vmi_uid: str) -> Path:
        if not vmi_uid or "/" in vmi_uid or vmi_uid in (".", ".."):
            raise ContainerDiskError(f"{vmi_uid[:80]!r} is not a VMI UID")
        return self._state_dir / f"{vmi_uid}.json"

    def _record(self, vmi: Mapping[str, Any], pod_uid: str, targets: list[str]) -> None:
        metadata = vmi.get("metadata") or {}
        record = {
            "namespace": metadata.get("namespace"),
            "name": metadata.get("name"),
            "podUID": pod_uid,
            "targets": targets,
        }
        path = self._record_path(str(metadata.get("uid") or ""))
        if self._read_record(path.stem) == record:
            return
        self._state_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        partial = path.with_suffix(".partial")
        partial.write_text(json.dumps(record))
        os.replace(partial, path)

    def _read_record(self, vmi_uid: str) -> JSON | None:
        try:
            loaded = json.loads(self._record_path(vmi_uid).read_text())
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as err:
            raise ContainerDiskError(f"the mount record of {vmi_uid} cannot be read: {err}") from None
        return loaded if isinstance(loaded, dict) else None


def _volume_parts(pod_uid: str) -> list[str]:
    return [pod_uid, "volumes", EMPTY_DIR, pod_paths.CONTAINER_DISKS]


def _name(vmi: Mapping[str, Any]) -> str:
    metadata = vmi.get("metadata") or {}
    return f"{metadata.get('namespace')}/{metadata.get('name')}"
