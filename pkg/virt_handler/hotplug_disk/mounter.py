"""Mounting a VMI's hotplugged volumes into its virt-launcher pod (KubeVirt's ``VolumeMounter``).

virt-controller runs an attachment pod (``hp-volume-*``) on the launcher's node that holds the claims and
names it in ``status.volumeStatus[].hotplugVolume.attachPodUID``. For each such volume still in the spec,
:meth:`HotplugMounter.mount` puts the claim into the launcher pod's ``hotplug-disks`` volume (see
:mod:`.hostops`): a Filesystem claim's ``disk.img`` bind-mounted at ``<volume>.img``, a Block claim's device
node at ``<volume>`` with the device allowed in the launcher container's devices cgroup. The attachment
pod's process, whose mount namespace tells which of its volumes a claim is, is found through its socket
``hp.sock`` and checked to be that pod's (:func:`kubevirt.virt_handler.pod_sockets.pod_process`); the pod
must be in the VMI's namespace (:mod:`.pod_namespace`), for Block claims too. A migration target's launcher
pod gets the volumes from the attachment pod virt-controller made next to it
(``status.migrationState.targetAttachmentPodUID``, KubeVirt's ``MountFromPod``).

Each VMI's targets are recorded (:mod:`.record`) before they are made; :meth:`~HotplugMounter.unmount`
removes those of volumes that left the spec, :meth:`~HotplugMounter.unmount_all` all of them when the VMI
is done, after a restart of the handler too. Volumes already in place are found from this process (through
the host's root), so a sync with nothing to change starts no helper process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Collection, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubevirt import safepath
from kubevirt.log import get_logger
from kubevirt.virt_handler.container_disk.hostmount import HOST, host_mount_namespace
from kubevirt.virt_handler.hotplug_disk import hostops
from kubevirt.virt_handler.hotplug_disk.devices_cgroup import PROC, launcher_devices_path
from kubevirt.virt_handler.hotplug_disk.layout import (
    ATTACHMENT_SOCKET,
    HotplugVolumeError,
    check_name,
    disks_dir,
)
from kubevirt.virt_handler.hotplug_disk.pod_namespace import pod_namespace
from kubevirt.virt_handler.hotplug_disk.record import BLOCK, FILE, Entry, Record, RecordStore
from kubevirt.virt_handler.launcher_sockets import pod_uid_of
from kubevirt.virt_handler.pod_sockets import PodSocketError, launcher_pid, pod_process
from kubevirt_api.view import JSON, VMIView

HOSTOPS_MODULE = "kubevirt.virt_handler.hotplug_disk.hostops"
HOSTOPS_TIMEOUT_SECONDS = 30.0

HostOps = Callable[[JSON, "str | None"], list[JSON]]


@dataclass(frozen=True)
class LauncherPod:
    """The VMI's virt-launcher pod on this node: its UID, and a way to its launcher's PID (checked to be
    the pod's; asked only when a block device is to be allowed in its cgroup)."""

    uid: str
    pid: Callable[[], int]

    @classmethod
    def of_socket(cls, pods_dir: Path, socket: Path) -> LauncherPod:
        """The launcher pod whose command socket :func:`find_launcher_socket` found."""
        return cls(uid=pod_uid_of(pods_dir, socket), pid=lambda: launcher_pid(socket))


@dataclass(frozen=True)
class HotplugVolume:
    name: str
    block: bool
    attach_uid: str


def target_attachment_pod(vmi: Mapping[str, Any]) -> str:
    """``status.migrationState.targetAttachmentPodUID``: the attachment pod virt-controller made next to
    the migration target's launcher pod, holding every hotplugged claim (empty when there is none)."""
    state = VMIView(vmi, error=HotplugVolumeError).status.optional_object("migrationState")
    uid = state.string("targetAttachmentPodUID") if state is not None else ""
    if state is not None and uid and not safepath.plain_name(uid):
        raise state.fail("targetAttachmentPodUID", f"{uid[:80]!r} is not a pod UID")
    return uid


def hotplug_volumes(vmi: Mapping[str, Any], *, from_pod: str = "") -> list[HotplugVolume]:
    """The volumes to have in the launcher pod: each ``volumeStatus`` entry with an attachment pod's UID
    whose volume is still in the spec (one that left it is unmounted, never mounted again). With
    ``from_pod`` (a migration target's attachment pod) every hotplugged entry in the spec, from that pod."""
    view = VMIView(vmi, error=HotplugVolumeError)
    in_spec = {volume.get("name") for volume in view.volumes()}
    found = []
    for entry in view.volume_statuses():
        hotplug = entry.optional_object("hotplugVolume")
        name = entry.string("name")
        if hotplug is None or name not in in_spec:
            continue
        if not (attach := from_pod or hotplug.string("attachPodUID")):
            continue
        if not safepath.plain_name(name):
            raise entry.fail("name", f"{name[:80]!r} is not a volume name")
        if not safepath.plain_name(attach):
            raise hotplug.fail("attachPodUID", f"{attach[:80]!r} is not a pod UID")
        mode = entry.object("persistentVolumeClaimInfo").string("volumeMode")
        found.append(HotplugVolume(name, mode == "Block", attach))
    return found


def domain_disk_names(domain: Mapping[str, Any] | None) -> set[str]:
    """The volumes the domain has a disk for (its disks' aliases are ``ua-<volume>``)."""
    disks = (((domain or {}).get("Spec") or {}).get("Devices") or {}).get("Disks") or []
    return {str((disk.get("Alias") or {}).get("Name") or "").removeprefix("ua-") for disk in disks}


def volumes_to_keep(vmi: Mapping[str, Any], domain: Mapping[str, Any] | None) -> set[str]:
    """What must stay in the launcher pod: the spec's volumes, and whatever disk the domain still has
    (a volume that left the spec goes once the launcher detached it)."""
    names = {str(volume.get("name")) for volume in VMIView(vmi, error=HotplugVolumeError).volumes()}
    return names | domain_disk_names(domain)


def run_hostops(request: JSON, namespace: str | None) -> list[JSON]:
    """Runs :mod:`.hostops` on one request; the answer to each of its operations, in order."""
    argv = [sys.executable, "-m", HOSTOPS_MODULE]
    if namespace is not None:
        argv += ["--namespace", namespace]
    argv.append(json.dumps(request))
    result = subprocess.run(
        argv, capture_output=True, text=True, timeout=HOSTOPS_TIMEOUT_SECONDS, check=False
    )
    if result.returncode != 0:
        raise HotplugVolumeError(
            result.stderr.strip()[-500:] or f"hotplug helper failed ({result.returncode})"
        )
    try:
        results = json.loads(result.stdout)["results"]
    except (ValueError, KeyError, TypeError):
        raise HotplugVolumeError(f"hotplug helper answered {result.stdout[:200]!r}") from None
    if not isinstance(results, list) or len(results) != len(request["operations"]):
        raise HotplugVolumeError("hotplug helper answered for other operations than asked")
    return [
        item if isinstance(item, dict) else {"error": "no answer", "kind": hostops.FAILED} for item in results
    ]


def attachment_pid(pods_dir: Path, attach_uid: str) -> int:
    """The attachment pod's process, from its socket in the pod's ``hotplug-disks`` (checked to be the
    pod's: its cgroup, namespaces of its own)."""
    return pod_process(pods_dir, disks_dir(attach_uid), ATTACHMENT_SOCKET, attach_uid)


def root_of(namespace: str) -> Path:
    """The root directory of the mount namespace ``/proc/<pid>/ns/mnt`` as this process reaches it."""
    if namespace == "/proc/self/ns/mnt":
        return Path("/")
    return Path(namespace).parent.parent / "root"


class HotplugMounter:
    """Mounts and unmounts one node's hotplugged volumes; records each VMI's under ``state_dir``."""

    def __init__(
        self,
        *,
        pods_dir: Path,
        host_pods_dir: Path,
        state_dir: Path,
        namespace: str | None = HOST,
        hostops_runner: HostOps = run_hostops,
        find_attachment: Callable[[Path, str], int] = attachment_pid,
        proc: Path = PROC,
    ) -> None:
        self._pods_dir = pods_dir  # the kubelet's pods directory as this process sees it (sockets)
        self._host_pods_dir = host_pods_dir  # and as the host's mount namespace sees it (mounts)
        self._records = RecordStore(state_dir)
        self._namespace = namespace
        self._hostops = hostops_runner
        self._find_attachment = find_attachment
        self._proc = proc
        self._log = get_logger()

    def _host_root(self) -> Path:
        """The root of the host's mount namespace as this process reaches it: through it, the host's
        mounts below the pods directory are seen as the helper sees them."""
        if not self._namespace:
            return Path("/")
        return root_of(host_mount_namespace() if self._namespace == HOST else self._namespace)

    @contextmanager
    def _host_pods(self) -> Iterator[int]:
        """The pods directory, resolved inside the host's root as the helper would after entering its
        namespace (mounts made below it after this process started are seen too)."""
        with safepath.opened(
            self._host_root(),
            str(self._host_pods_dir),
            os.O_PATH | os.O_DIRECTORY,
            resolve=safepath.IN_ROOT,
        ) as pods:
            yield pods

    def _identity(self, vmi: Mapping[str, Any]) -> tuple[str, str, str]:
        view = VMIView(vmi, error=HotplugVolumeError)
        return check_name(view.uid, "VMI UID"), view.namespace, view.name

    def mounted(self, vmi: Mapping[str, Any]) -> frozenset[str]:
        """The recorded volumes whose target in the launcher pod is in place (KubeVirt's ``IsMounted``)."""
        uid = VMIView(vmi, error=HotplugVolumeError).uid
        record = self._records.load(uid) if uid else None
        if record is None or not record.entries:
            return frozenset()
        try:
            with self._host_pods() as pods:
                return frozenset(
                    entry.volume
                    for entry in record.entries.values()
                    if hostops.in_place(
                        pods, record.pod_uid, entry.volume, block=entry.block, device=entry.device
                    )
                )
        except OSError:
            return frozenset()

    def mount(self, vmi: Mapping[str, Any], launcher: LauncherPod, *, from_pod: str = "") -> list[str]:
        """Mounts each hotplugged volume not in place yet (all from the attachment pod ``from_pod`` when
        given, see :func:`hotplug_volumes`); returns warnings (a claim without its ``disk.img``: KubeVirt's
        ``HotplugFailed`` event) and raises what was refused or failed."""
        wanted = hotplug_volumes(vmi, from_pod=from_pod)
        if not wanted:
            return []
        uid, namespace, name = self._identity(vmi)
        check_name(launcher.uid, "pod UID")
        record = self._records.load(uid)
        if record is not None and record.pod_uid != launcher.uid:
            self._remove(uid, record, list(record.entries.values()))  # another launcher pod's, left over
            record = None
        record = record or Record(namespace, name, launcher.uid)
        in_place = self.mounted(vmi)
        errors: list[str] = []
        planned: list[tuple[HotplugVolume, JSON]] = []
        cgroup: str | None = None
        pids: dict[str, int | None] = {}
        for volume in wanted:
            if volume.name in in_place:
                continue
            if volume.attach_uid not in pids:
                pids[volume.attach_uid] = self._attachment(volume, namespace, errors)
            pid = pids[volume.attach_uid]
            if pid is None:
                continue
            if volume.block:
                if cgroup is None:
                    cgroup = self._launcher_cgroup(launcher)
                old = record.entries.get(volume.name)
                record.entries[volume.name] = Entry(
                    volume.name,
                    BLOCK,
                    cgroup=cgroup,
                    device=old.device if old and old.block else "",
                    preexisting=bool(old and old.block and old.preexisting),
                )
                op: JSON = {"op": "makeBlock", "cgroup": cgroup}
            else:
                record.entries.setdefault(volume.name, Entry(volume.name, FILE))
                op = {"op": "mountFile", "attachPid": pid}
            op.update(volume=volume.name, launcher=launcher.uid, attach=volume.attach_uid)
            planned.append((volume, op))
        warnings: list[str] = []
        if planned:
            self._records.save(uid, record)  # before anything is made: a restarted handler removes it
            results = self._hostops(
                {"podsDir": str(self._host_pods_dir), "operations": [op for _, op in planned]},
                self._namespace,
            )
            for (volume, _), result in zip(planned, results, strict=True):
                self._take_result(vmi, record, volume, result, errors, warnings)
            self._records.save(uid, record)
        if errors:
            raise HotplugVolumeError("; ".join(errors))
        return warnings

    def _launcher_cgroup(self, launcher: LauncherPod) -> str:
        try:
            return launcher_devices_path(launcher.pid(), proc=self._proc)
        except PodSocketError as err:
            raise HotplugVolumeError(f"the launcher's process: {err}") from None
        except OSError as err:
            raise HotplugVolumeError(f"the launcher's process: {err.strerror}") from None

    def _attachment(self, volume: HotplugVolume, namespace: str, errors: list[str]) -> int | None:
        """The attachment pod's PID once it runs here and is in the VMI's ``namespace``; None while its
        socket is not there, or when it is refused (then an error says why).

        A Block claim needs no process, but is taken only from a pod that runs (its volumes all set up)
        and is checked as a Filesystem one is."""
        kind = "block" if volume.block else "filesystem"
        try:
            pid = self._find_attachment(self._pods_dir, volume.attach_uid)
        except PodSocketError as err:
            errors.append(f"failed to mount {kind} hotplug volume {volume.name}: the attachment pod: {err}")
            return None
        except OSError:
            return None  # not listening yet
        try:
            with self._host_pods() as pods:
                found = pod_namespace(pods, volume.attach_uid)
        except (HotplugVolumeError, OSError) as err:
            errors.append(f"failed to mount {kind} hotplug volume {volume.name}: {err}")
            return None
        if found != namespace:
            errors.append(
                f"failed to mount {kind} hotplug volume {volume.name}: refused, the attachment pod "
                f"{volume.attach_uid} is in namespace {found}, not in the VMI's namespace {namespace}"
            )
            return None
        return pid

    def _take_result(
        self,
        vmi: Mapping[str, Any],
        record: Record,
        volume: HotplugVolume,
        result: JSON,
        errors: list[str],
        warnings: list[str],
    ) -> None:
        kind = "block" if volume.block else "filesystem"
        if "error" in result:
            message = f"failed to mount {kind} hotplug volume {volume.name}: {result['error']}"
            (warnings if result.get("kind") == hostops.MISSING else errors).append(message)
            return
        if result.get("state") != hostops.MOUNTED:
            return
        entry = record.entries[volume.name]
        if volume.block:
            device = str(result.get("device") or "")
            # A rule found in place that we added before (and recorded) is still ours to remove.
            ours_before = entry.device == device and not entry.preexisting and bool(entry.device)
            entry.preexisting = bool(result.get("preexisting")) and not ours_before
            entry.device = device
        self._log.info("hotplug volume mounted", name=_name(vmi), volume=volume.name, kind=kind)

    def unmount(self, vmi: Mapping[str, Any], keep: Collection[str]) -> None:
        """Removes the recorded targets of volumes not in ``keep`` (see :func:`volumes_to_keep`)."""
        uid = VMIView(vmi, error=HotplugVolumeError).uid
        record = self._records.load(uid) if uid else None
        if record is None:
            return
        self._remove(uid, record, [entry for entry in record.entries.values() if entry.volume not in keep])

    def unmount_all(self, vmi_uid: str) -> None:
        """Removes every recorded target of the VMI, then its record (KubeVirt's ``UnmountAll``)."""
        record = self._records.load(vmi_uid)
        if record is None:
            return
        self._remove(vmi_uid, record, list(record.entries.values()))

    def _remove(self, uid: str, record: Record, entries: list[Entry]) -> None:
        if not entries:
            return
        operations: list[JSON] = []
        for entry in entries:
            op: JSON = {"volume": entry.volume, "launcher": record.pod_uid}
            if entry.block:
                op.update(
                    op="removeBlock", device=entry.device, cgroup=entry.cgroup, deny=not entry.preexisting
                )
            else:
                op.update(op="unmountFile")
            operations.append(op)
        results = self._hostops(
            {"podsDir": str(self._host_pods_dir), "operations": operations}, self._namespace
        )
        errors = []
        for entry, result in zip(entries, results, strict=True):
            if "error" in result:
                errors.append(f"failed to unmount hotplug volume {entry.volume}: {result['error']}")
                continue
            del record.entries[entry.volume]
            if result.get("changed"):
                self._log.info("hotplug volume unmounted", vmi_uid=uid, volume=entry.volume)
        self._records.save(uid, record)  # kept with what is still to be removed
        if errors:
            raise HotplugVolumeError("; ".join(errors))

    def recorded(self, namespace: str, name: str) -> list[str]:
        """The UIDs of recorded VMIs called ``namespace/name`` (a deleted VMI is only known by its key)."""
        return [
            uid
            for uid, record in self._records.all().items()
            if record.namespace == namespace and record.name == name
        ]


def _name(vmi: Mapping[str, Any]) -> str:
    metadata = vmi.get("metadata") or {}
    return f"{metadata.get('namespace')}/{metadata.get('name')}"


__all__ = [
    "HotplugMounter",
    "HotplugVolume",
    "HotplugVolumeError",
    "LauncherPod",
    "domain_disk_names",
    "hotplug_volumes",
    "target_attachment_pod",
    "volumes_to_keep",
]
