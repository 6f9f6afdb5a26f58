"""The disk images virt-handler makes in a launcher pod before its VMI reaches the launcher.

As KubeVirt's handler does before syncing a starting VMI (and on a migration target before preparing
it), each missing ``DiskOrCreate`` image (a ``hostDisk`` of that type, or a filesystem claim's
``disk.img``, see :mod:`kubevirt.host_disk.volumes`) is made sparse in ``<vmi-disks>/<volume>/`` through
the pod's root, with the cluster configuration's ``pvcTolerateLessSpaceUpToPercent`` and
``minimumReservePVCBytes``, and given to KubeVirt's qemu user (107) whether the launcher runs as root or
not. An image made smaller than asked is told on the VMI with KubeVirt's ``ToleratedSmallPV`` event;
one that does not fit fails the sync with KubeVirt's "preparing host-disks failed: ..." message. An image
already there is left as it is. No symlink is followed: ``vmi-disks`` is found in the pod's root (where
``/var/run`` may link to ``/run``), and below it every link is refused.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from kubevirt import host_disk, pod_paths
from kubevirt.client import EventSink
from kubevirt.log import get_logger
from kubevirt.podroot import PodRoot
from kubevirt.virt_config import ClusterConfig
from kubevirt.virt_handler.pod_ownership import QEMU_USER
from kubevirt.virt_handler.pod_sockets import PodSocketError, launcher_root
from kubevirt_api.view import VMIView

FAILED_PREFIX = "preparing host-disks failed: "


class HostDiskPreparationError(Exception):
    """The VMI's images could not be made; the message is the one its sync failure reports."""


def images_to_make(vmi: Mapping[str, Any]) -> list[host_disk.HostDiskImage]:
    """The VMI's ``DiskOrCreate`` images (made unless there); a field that cannot make one raises."""
    try:
        found = host_disk.images(VMIView.of(vmi))
    except (host_disk.HostDiskError, ValueError) as err:
        raise HostDiskPreparationError(str(err)) from None
    return [image for image in found if image.or_create]


def create_images(
    root: PodRoot,
    wanted: list[host_disk.HostDiskImage],
    *,
    toleration: int,
    reserve: int,
    tolerated: Callable[[str], None],
    owner: int = QEMU_USER,
) -> list[str]:
    """Makes the missing images of ``wanted`` (see :func:`images_to_make`) in the pod at ``root``, in
    order, owned by ``owner``; the paths made (as the pod sees them). ``tolerated`` gets the message of
    each image made smaller than asked."""
    if not wanted:
        return []
    try:
        base = root.open_directory(pod_paths.VMI_DISKS_DIR)  # /var/run may be a link to /run in the image
    except OSError:
        first = wanted[0]
        raise HostDiskPreparationError(
            f"{FAILED_PREFIX}{first.path_field}: the directory of {first.path} is not mounted in the pod"
        ) from None
    made: list[str] = []
    try:
        for image in wanted:
            if _make(base, image, toleration, reserve, tolerated, owner):
                made.append(image.path)
    finally:
        os.close(base)
    return made


def _make(
    base: int,
    image: host_disk.HostDiskImage,
    toleration: int,
    reserve: int,
    tolerated: Callable[[str], None],
    owner: int,
) -> bool:
    try:
        size = host_disk.plan(base, image, toleration=toleration, reserve=reserve)
        if size is None or not host_disk.create(base, image, size, owner=owner):
            return False
    except host_disk.HostDiskError as err:
        raise HostDiskPreparationError(f"{FAILED_PREFIX}{err}") from None
    except OSError as err:
        raise HostDiskPreparationError(
            f"{FAILED_PREFIX}{image.path_field}: {image.path}: {err.strerror}"
        ) from None
    if size < image.capacity:
        tolerated(host_disk.tolerated_message(image.capacity, size, toleration))
    return True


class HostDisks:
    """:func:`create_images` for the pod whose launcher serves a given command socket, with the cluster
    configuration in force, its ``ToleratedSmallPV`` events recorded on the VMI."""

    def __init__(
        self,
        *,
        events: EventSink,
        config: Callable[[], ClusterConfig] = ClusterConfig,
        pod_root: Callable[[Path], PodRoot] = launcher_root,
        owner: int = QEMU_USER,
    ) -> None:
        self._events = events
        self._config = config
        self._pod_root = pod_root
        self._owner = owner
        self._log = get_logger()

    def prepare(self, vmi: Mapping[str, Any], launcher_socket: Path) -> list[str]:
        wanted = images_to_make(vmi)
        if not wanted:
            return []  # no image to make: the pod is not even looked up
        try:
            root = self._pod_root(launcher_socket)
        except (PodSocketError, OSError) as err:  # OSError: the launcher went away while dialled
            raise HostDiskPreparationError(f"the launcher's pod: {err}") from None
        config = self._config()
        name = str((vmi.get("metadata") or {}).get("name") or "")

        def tolerated(message: str) -> None:
            self._log.info(message, name=name)
            self._events.event(vmi, "Normal", host_disk.TOLERATED_SMALL_PV_REASON, message)

        made = create_images(
            root,
            wanted,
            toleration=config.less_pvc_space_toleration,
            reserve=config.minimum_reserve_pvc_bytes,
            tolerated=tolerated,
            owner=self._owner,
        )
        for path in made:
            self._log.info("host disk created", name=name, path=path)
        return made
