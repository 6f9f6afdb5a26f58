"""The namespace of a pod on this node, as the kubelet wrote it into the pod's directory.

A VMI's status names the attachment pods its claims come from (``hotplugVolume.attachPodUID``,
``migrationState.targetAttachmentPodUID``), and a VM owner can write that status. Named by UID, an
attachment pod of another namespace on the same node would hand that namespace's claims to the owner's
launcher. :func:`~kubevirt.virt_handler.pod_sockets.pod_process` proves that a process is the named pod's,
not which namespace the pod is in, and virt-handler may not read pods from the API server (nor may
KubeVirt's). What tells it is the ``namespace`` file of the service-account token volume
(``kube-api-access-*``) the ServiceAccount admission plugin adds to each pod: the kubelet writes it from
the pod's ``metadata.namespace``. It is read from the kubelet's directory of the pod in the host's view,
never through the pod's own root, and no link is followed but the kubelet's own ``..data``, resolved by
hand. Its content comes from the pod's own namespace only: users of that namespace could make a pod claim
another (a projected volume of their making), which exposes nothing but their own claims; the VM owner
who names a pod of theirs cannot.
"""

from __future__ import annotations

import os
from typing import Final

from kubevirt import safepath
from kubevirt.virt_handler.hotplug_disk.layout import HotplugVolumeError, check_name

PROJECTED: Final = "kubernetes.io~projected"
TOKEN_VOLUME_PREFIX: Final = "kube-api-access-"
# The kubelet's atomic writer keeps a volume's files in ``..<timestamp>/`` and points ``..data`` at it.
DATA_LINK: Final = "..data"
NAMESPACE_FILE: Final = "namespace"
_MAX_NAMESPACE = 63  # a DNS label


def _open(directory: int, path: str, flags: int) -> int:
    return safepath.openat2(directory, path, flags, resolve=safepath.NO_SYMLINKS)


def _token_volume_namespace(volumes: int, volume: str) -> str:
    """The ``namespace`` file of one token volume, through its ``..data`` link (one plain name)."""
    with safepath.closing(_open(volumes, volume, os.O_PATH | os.O_DIRECTORY)) as directory:
        data = os.readlink(DATA_LINK, dir_fd=directory)
        if not safepath.plain_name(data):
            raise HotplugVolumeError(f"{volume}/{DATA_LINK} points out of its volume")
        with safepath.closing(_open(directory, f"{data}/{NAMESPACE_FILE}", os.O_RDONLY)) as fd:
            text = os.read(fd, _MAX_NAMESPACE + 2).decode(errors="replace").strip()
    if not text or len(text) > _MAX_NAMESPACE:
        raise HotplugVolumeError(f"{volume}/{NAMESPACE_FILE} holds no namespace name")
    return text


def _token_volumes(pods: int, pod_uid: str) -> set[str]:
    """The namespaces the pod's token volumes name (none without such a volume)."""
    try:
        volumes = _open(pods, f"{pod_uid}/volumes/{PROJECTED}", os.O_RDONLY | os.O_DIRECTORY)
    except FileNotFoundError:
        return set()
    with safepath.closing(volumes):
        return {
            _token_volume_namespace(volumes, volume)
            for volume in sorted(os.listdir(volumes))
            if volume.startswith(TOKEN_VOLUME_PREFIX)
        }


def pod_namespace(pods: int, pod_uid: str) -> str:
    """The namespace of the pod ``pod_uid`` below the kubelet's pods directory ``pods`` (a descriptor).

    Raises :class:`HotplugVolumeError` saying why when it cannot be told: the pod has no service-account
    token volume (``automountServiceAccountToken: false``), or its token volumes disagree."""
    check_name(pod_uid, "pod UID")
    where = f"the namespace of pod {pod_uid}"
    try:
        found = _token_volumes(pods, pod_uid)
    except safepath.UnsafePathError as err:
        raise HotplugVolumeError(f"{where}: refused, {err.strerror}") from None
    except OSError as err:
        raise HotplugVolumeError(f"{where}: {err.strerror}") from None
    except HotplugVolumeError as err:
        raise HotplugVolumeError(f"{where}: {err}") from None
    if not found:
        raise HotplugVolumeError(f"{where} cannot be verified: it has no service account token volume")
    if len(found) > 1:
        raise HotplugVolumeError(f"{where} is ambiguous: {', '.join(sorted(found))}")
    return found.pop()
