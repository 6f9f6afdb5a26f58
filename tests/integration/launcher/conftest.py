"""Harness for virt-launcher on real QEMU: a tiny test guest, and launchers started like in a pod.

The guest is Debian's kernel (``linux-image-amd64``, its ``vmlinux`` unpacked from the compressed image)
and a busybox initramfs whose ``/init`` prints a marker and then a numbered tick every second to the
serial port. Both are built once and cached under ``${KUBEVIRT_CACHE:-/var/cache/kubevirt-py}/test-guest``.

Each launcher runs in its own mount namespace, as in a pod: its share directory (a temporary directory of
the test, reachable from here like virt-handler reaches the pod's emptyDir) is mounted at
``/var/run/kubevirt``, tmpfs at ``/var/run/kubevirt-private`` and ``/var/run/kubevirt-ephemeral-disks``,
and the guest's kernel where a kernel-boot container disk would be. The test plays virt-handler through
the command socket.
"""

from __future__ import annotations

import contextlib
import glob
import gzip
import hashlib
import io
import json
import lzma
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import pytest

from kubevirt.handler_launcher_com.cmd.client import LauncherClient, LauncherDisconnectedError
from kubevirt.handler_launcher_com.notify.v1 import notify_pb2, notify_pb2_grpc
from kubevirt.handler_launcher_com.server import register_notify_info, serve_unix
from kubevirt.handler_launcher_com.sockets import NOTIFY_PIPE_SOCKET, cmd_socket_path
from kubevirt_testing import pod_process

CACHE = Path(os.environ.get("KUBEVIRT_CACHE", "/var/cache/kubevirt-py"))
GUEST_DIR = CACHE / "test-guest"
CAPS_CACHE = CACHE / "libvirt-qemu-capabilities"
# KubeVirt's non-root launcher pod: uid and gid 107 (the image's user qemu), every capability dropped but
# NET_BIND_SERVICE, no privilege escalation. A session libvirt probes QEMU without KVM access, so its
# capabilities differ from root's and are cached apart.
NON_ROOT_UID = 107
NON_ROOT_EXEC = (
    "setpriv", "--reuid", str(NON_ROOT_UID), "--regid", str(NON_ROOT_UID), "--clear-groups",
    "--inh-caps=-all,+net_bind_service", "--ambient-caps", "+net_bind_service",
    "--bounding-set", "-all,+net_bind_service", "--no-new-privs",
)  # fmt: skip
NON_ROOT_CAPS_CACHE = CACHE / f"libvirt-qemu-capabilities-uid{NON_ROOT_UID}"
MARKER = "KUBEVIRT-PY-GUEST-UP"
GUEST_INIT = f"""#!/bin/busybox sh
/bin/busybox echo {MARKER} > /dev/ttyS0
i=0
while true; do
  i=$((i+1))
  /bin/busybox echo "tick $i" > /dev/ttyS0
  /bin/busybox sleep 1
done
"""
# The networked guest: virtio-net's modules, DHCP on eth0 (printing the lease), an HTTP server on port
# 80 (with a 16 MiB /blob for throughput), then the same marker and ticks. Built as NET_INITRD beside
# the plain initramfs.
NET_MODULES = (
    "virtio_ring",
    "virtio",
    "virtio_pci_legacy_dev",
    "virtio_pci_modern_dev",
    "virtio_pci",
    "failover",
    "net_failover",
    "virtio_net",
)
NET_LEASE_MARKER = "DHCP-BOUND"
NET_GUEST_INIT = f"""#!/bin/busybox sh
B=/bin/busybox
$B mkdir -p /proc /sys /www
$B mount -t proc proc /proc
$B mount -t sysfs sys /sys
for m in {" ".join(NET_MODULES)}; do $B insmod /lib/modules/$m.ko; done
$B ip link set lo up
$B ip link set eth0 up
$B udhcpc -i eth0 -n -q -t 20 -T 2 -s /bin/dhcp.sh > /dev/null 2>&1
echo hello-from-the-guest > /www/index.html
$B mknod /dev/zero c 1 5
$B dd if=/dev/zero of=/www/blob bs=1M count=16 2> /dev/null
$B httpd -p 80 -h /www
$B echo {MARKER} > /dev/ttyS0
i=0
while true; do
  i=$((i+1))
  $B echo "tick $i" > /dev/ttyS0
  $B sleep 1
done
"""
NET_DHCP_SCRIPT = f"""#!/bin/busybox sh
B=/bin/busybox
[ "$1" = bound ] || exit 0
$B ip addr add $ip/$mask dev $interface
$B ip route add default via $router dev $interface
$B echo "{NET_LEASE_MARKER} ip=$ip router=$router mtu=$mtu dns=$dns" > /dev/ttyS0
"""
# Named by its content: a changed init is a new file, not a stale cache.
_NET_DIGEST = hashlib.sha256((NET_GUEST_INIT + NET_DHCP_SCRIPT).encode()).hexdigest()[:8]
NET_INITRD = f"initrd-net-{_NET_DIGEST}.gz"
# A guest that sees its disks: virtio-blk and ISO 9660 are modules in Debian's kernel, loaded in this order.
DISK_GUEST_MODULES = (
    "drivers/virtio/virtio_ring.ko",
    "drivers/virtio/virtio.ko",
    "drivers/virtio/virtio_pci_modern_dev.ko",
    "drivers/virtio/virtio_pci_legacy_dev.ko",
    "drivers/virtio/virtio_pci.ko",
    "drivers/block/virtio_blk.ko",
    "drivers/cdrom/cdrom.ko",
    "fs/isofs/isofs.ko",
)
# It prints what its first disk starts with, then each other disk's size and volume label, the files of
# each ISO among them (running a user-data script it finds), and writes a marker to sector 1 of the
# first disk.
DISK_GUEST_INIT = """#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin
mount -t devtmpfs devtmpfs /dev
for module in $(cat /lib/modules/order); do insmod /lib/modules/$module; done
i=0
while [ ! -b /dev/vdb ] && [ $i -lt 200 ]; do sleep 0.1; i=$((i+1)); done
echo "vda: $(head -c 32 /dev/vda | tr -cd 'A-Z-')" > /dev/ttyS0
mkdir -p /mnt
for disk in /dev/vd[b-z]; do
  label=$(dd if=$disk bs=1 skip=32808 count=32 2>/dev/null | tr -d ' \\0')
  echo "${disk#/dev/}: size=$(blockdev --getsize64 $disk) label=$label" > /dev/ttyS0
  if mount -t iso9660 -o ro $disk /mnt 2>/dev/null; then
    for file in $(cd /mnt && find . -type f | sort); do
      echo "${disk#/dev/}: file ${file#./}=$(head -c 100 /mnt/$file | tr -d '\\n')" > /dev/ttyS0
    done
    [ -f /mnt/user-data ] && sh /mnt/user-data > /dev/ttyS0 2>&1
    umount /mnt
  fi
done
echo GUEST-WROTE-THIS | dd of=/dev/vda bs=512 seek=1 conv=notrunc,fsync 2>/dev/null
sync
echo DISKS-CHECKED > /dev/ttyS0
while true; do sleep 1; done
"""
# A guest that watches its disks come and go (hotplug): virtio-blk and virtio-scsi with SCSI disks, and
# what sd_mod needs, in this order. It prints each disk that appears (its size and the capital letters
# its first bytes hold) and each one that goes.
HOTPLUG_GUEST_MODULES = (
    "drivers/scsi/scsi_common.ko",
    "drivers/scsi/scsi_mod.ko",
    "drivers/virtio/virtio_ring.ko",
    "drivers/virtio/virtio.ko",
    "drivers/virtio/virtio_pci_modern_dev.ko",
    "drivers/virtio/virtio_pci_legacy_dev.ko",
    "drivers/virtio/virtio_pci.ko",
    "drivers/block/virtio_blk.ko",
    "drivers/scsi/virtio_scsi.ko",
    "crypto/crct10dif_common.ko",
    "lib/crc-t10dif.ko",
    "lib/crc64.ko",
    "lib/crc64-rocksoft.ko",
    "block/t10-pi.ko",
    "drivers/scsi/sd_mod.ko",
)
HOTPLUG_WATCHING = "HOTPLUG-WATCHING"
HOTPLUG_GUEST_INIT = f"""#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin
mkdir -p /sys
mount -t devtmpfs devtmpfs /dev
mount -t sysfs sysfs /sys
for module in $(cat /lib/modules/order); do insmod /lib/modules/$module; done
echo {HOTPLUG_WATCHING} > /dev/ttyS0
known=""
while true; do
  now=$(cd /sys/block && ls -d sd* vd* 2>/dev/null | tr '\\n' ' ')
  for disk in $now; do
    case " $known " in *" $disk "*) ;; *)
      size=$(blockdev --getsize64 /dev/$disk)
      echo "DISK-ADDED $disk size=$size head=$(head -c 32 /dev/$disk | tr -cd 'A-Z-')" > /dev/ttyS0;;
    esac
  done
  for disk in $known; do
    case " $now " in *" $disk "*) ;; *) echo "DISK-REMOVED $disk" > /dev/ttyS0;; esac
  done
  known="$now"
  sleep 0.3
done
"""
LAUNCHER = shutil.which("virt-launcher") or str(Path(sys.executable).parent / "virt-launcher")


# -- the test guest ------------------------------------------------------------------------------


def _apt_download(package: str, into: Path) -> Path:
    def download() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["apt-get", "download", package], cwd=into, capture_output=True, text=True, check=False
        )

    if download().returncode != 0:
        subprocess.run(["apt-get", "update", "-qq"], check=True, capture_output=True)
        result = download()
        if result.returncode != 0:
            raise RuntimeError(f"apt-get download {package}: {result.stderr}")
    found = sorted(into.glob(f"{package}_*.deb"))
    if not found:
        raise RuntimeError(f"apt-get download {package} produced no .deb")
    return found[-1]


def _kernel_package() -> str:
    out = subprocess.run(
        ["apt-cache", "depends", "linux-image-amd64"], capture_output=True, text=True, check=True
    ).stdout
    for line in out.splitlines():
        line = line.strip()
        if line.startswith("Depends: linux-image-"):
            return line.split()[1]
    raise RuntimeError("linux-image-amd64 depends on no kernel package")


def _extract_vmlinux(vmlinuz: bytes) -> bytes:
    """The uncompressed ELF kernel inside a bzImage (it boots faster, via PVH)."""
    for magic, decompress in ((b"\xfd7zXZ\x00", "xz"), (b"\x1f\x8b\x08", "gzip")):
        offset = vmlinuz.find(magic)
        while offset != -1:
            with contextlib.suppress(lzma.LZMAError, OSError, EOFError):
                if decompress == "xz":
                    data = lzma.LZMADecompressor().decompress(vmlinuz[offset:])
                else:
                    data = gzip.GzipFile(fileobj=io.BytesIO(vmlinuz[offset:])).read()
                if data.startswith(b"\x7fELF"):
                    return data
            offset = vmlinuz.find(magic, offset + 1)
    raise RuntimeError("no compressed ELF kernel found in vmlinuz")


def _cpio_newc(entries: list[tuple[str, int, bytes, int, int]]) -> bytes:
    """A newc cpio archive from (name, mode, data, devmajor, devminor) entries."""
    out = io.BytesIO()

    def pad(length: int) -> None:
        out.write(b"\0" * ((4 - length % 4) % 4))

    for ino, (name, mode, data, rmajor, rminor) in enumerate([*entries, ("TRAILER!!!", 0, b"", 0, 0)], 1):
        encoded = name.encode() + b"\0"
        header = "070701" + "".join(
            f"{value:08x}"
            for value in (ino, mode, 0, 0, 1, 0, len(data), 0, 0, rmajor, rminor, len(encoded), 0)
        )
        out.write(header.encode() + encoded)
        pad(110 + len(encoded))
        out.write(data)
        pad(len(data))
    return out.getvalue()


def build_test_guest(
    target: Path = GUEST_DIR, *, init: str = GUEST_INIT, modules: tuple[str, ...] = ()
) -> Path:
    """Build (once) ``vmlinux`` and ``initrd.gz`` in ``target``; returns ``target``.

    ``modules`` (paths below the kernel's ``kernel/`` directory) go to ``/lib/modules``, listed in
    ``/lib/modules/order``.
    """
    if (target / "vmlinux").exists() and (target / "initrd.gz").exists():
        return target
    target.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target) as work_dir:
        work = Path(work_dir)
        os.chmod(work, 0o755)  # apt's sandbox user must write here
        kernel_deb = _apt_download(_kernel_package(), work)
        busybox_deb = _apt_download("busybox-static", work)
        for deb, name in ((kernel_deb, "kernel"), (busybox_deb, "busybox")):
            subprocess.run(["dpkg-deb", "-x", str(deb), str(work / name)], check=True)
        vmlinuz = next(iter(glob.glob(str(work / "kernel/boot/vmlinuz-*"))))
        vmlinux = _extract_vmlinux(Path(vmlinuz).read_bytes())
        busybox = (work / "busybox/bin/busybox").read_bytes()
        module_root = next(iter(glob.glob(str(work / "kernel/lib/modules/*/kernel"))), "")
        module_entries = [
            (f"lib/modules/{Path(m).name}", 0o100644, (Path(module_root) / m).read_bytes(), 0, 0)
            for m in modules
        ]
        order = "".join(f"{Path(m).name}\n" for m in modules).encode()
        initramfs = _cpio_newc(
            [
                ("bin", 0o40755, b"", 0, 0),
                ("dev", 0o40755, b"", 0, 0),
                ("dev/console", 0o20600, b"", 5, 1),
                ("dev/ttyS0", 0o20600, b"", 4, 64),
                ("bin/busybox", 0o100755, busybox, 0, 0),
                ("init", 0o100755, init.encode(), 0, 0),
                *([("lib", 0o40755, b"", 0, 0), ("lib/modules", 0o40755, b"", 0, 0)] if modules else []),
                *module_entries,
                *([("lib/modules/order", 0o100644, order, 0, 0)] if modules else []),
            ]
        )
        (work / "vmlinux").write_bytes(vmlinux)
        (work / "initrd.gz").write_bytes(gzip.compress(initramfs, 6))
        for name in ("vmlinux", "initrd.gz"):
            os.replace(work / name, target / name)
    return target


def build_network_initrd(target: Path = GUEST_DIR) -> Path:
    """Build (once) the networked guest's initramfs (:data:`NET_INITRD`) in ``target``; returns ``target``."""
    if (target / NET_INITRD).exists():
        return target
    target.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target) as work_dir:
        work = Path(work_dir)
        os.chmod(work, 0o755)
        for deb, name in (
            (_apt_download(_kernel_package(), work), "kernel"),
            (_apt_download("busybox-static", work), "busybox"),
        ):
            subprocess.run(["dpkg-deb", "-x", str(deb), str(work / name)], check=True)
        entries = [
            ("bin", 0o40755, b"", 0, 0),
            ("dev", 0o40755, b"", 0, 0),
            ("dev/console", 0o20600, b"", 5, 1),
            ("dev/ttyS0", 0o20600, b"", 4, 64),
            ("lib", 0o40755, b"", 0, 0),
            ("lib/modules", 0o40755, b"", 0, 0),
            ("bin/busybox", 0o100755, (work / "busybox/bin/busybox").read_bytes(), 0, 0),
            ("bin/dhcp.sh", 0o100755, NET_DHCP_SCRIPT.encode(), 0, 0),
            ("init", 0o100755, NET_GUEST_INIT.encode(), 0, 0),
        ]
        for module in NET_MODULES:
            found = next(
                iter(glob.glob(str(work / f"kernel/lib/modules/*/kernel/**/{module}.ko"), recursive=True))
            )
            entries.append((f"lib/modules/{module}.ko", 0o100644, Path(found).read_bytes(), 0, 0))
        (work / NET_INITRD).write_bytes(gzip.compress(_cpio_newc(entries), 6))
        os.replace(work / NET_INITRD, target / NET_INITRD)
    return target


@pytest.fixture(scope="session")
def test_guest() -> Path:
    return build_test_guest()


@pytest.fixture(scope="session")
def network_test_guest(test_guest: Path) -> Path:
    return build_network_initrd(test_guest)


@pytest.fixture(scope="session")
def disk_test_guest() -> Path:
    """The test guest with disk drivers, reporting what its two virtio disks hold (DISK_GUEST_INIT)."""
    # Cached per content: a changed /init or module list builds a new guest.
    key = hashlib.sha256("\n".join([DISK_GUEST_INIT, *DISK_GUEST_MODULES]).encode()).hexdigest()[:12]
    return build_test_guest(
        CACHE / f"test-guest-disks-{key}", init=DISK_GUEST_INIT, modules=DISK_GUEST_MODULES
    )


@pytest.fixture(scope="session")
def hotplug_test_guest() -> Path:
    """The test guest reporting the disks that appear and disappear (HOTPLUG_GUEST_INIT)."""
    key = hashlib.sha256("\n".join([HOTPLUG_GUEST_INIT, *HOTPLUG_GUEST_MODULES]).encode()).hexdigest()[:12]
    return build_test_guest(
        CACHE / f"test-guest-hotplug-{key}", init=HOTPLUG_GUEST_INIT, modules=HOTPLUG_GUEST_MODULES
    )


def kernel_boot_vmi(name: str, *, uid: str | None = None, **spec_extra: Any) -> dict[str, Any]:
    """A defaulted VMI booting the test guest's kernel and initramfs from a kernel-boot container."""
    spec: dict[str, Any] = {
        "domain": {
            "resources": {"requests": {"memory": "128Mi"}},
            "cpu": {"cores": 1, "sockets": 1, "threads": 1, "maxSockets": 4, "model": "host-model"},
            "memory": {"guest": "128Mi"},
            "machine": {"type": "q35"},
            "firmware": {
                "uuid": str(uuid.uuid5(uuid.NAMESPACE_DNS, name)),
                "kernelBoot": {
                    "kernelArgs": "console=ttyS0 quiet panic=-1",
                    "container": {
                        "image": "registry.invalid/test-guest:1",
                        "kernelPath": "/boot/vmlinux",
                        "initrdPath": "/boot/initrd.gz",
                    },
                },
            },
            "features": {"acpi": {"enabled": True}},
            "devices": {"autoattachPodInterface": False},
        },
        "terminationGracePeriodSeconds": 5,
        "evictionStrategy": "None",
        "architecture": "amd64",
    }
    spec.update(spec_extra)
    return {
        "kind": "VirtualMachineInstance",
        "apiVersion": "kubevirt.io/v1",
        "metadata": {"name": name, "namespace": "default", "uid": uid or str(uuid.uuid4())},
        "spec": spec,
        "status": {"phase": "Scheduled", "runtimeUser": 0},
    }


# -- virt-handler's notify server, recording what the launcher reports -----------------------------


class NotifyRecorder(notify_pb2_grpc.NotifyServicer):
    def __init__(self) -> None:
        self.events: list[tuple[str, dict[str, Any]]] = []
        self._lock = threading.Lock()
        self.server: grpc.Server | None = None

    def HandleDomainEvent(self, request: Any, context: Any) -> Any:  # noqa: N802
        with self._lock:
            self.events.append((request.eventType, json.loads(request.domainJSON)))
        return notify_pb2.Response(success=True)

    def HandleK8sEvent(self, request: Any, context: Any) -> Any:  # noqa: N802
        return notify_pb2.Response(success=True)

    def snapshot(self) -> list[tuple[str, dict[str, Any]]]:
        with self._lock:
            return list(self.events)

    def wait_for(self, predicate: Any, timeout: float) -> tuple[str, dict[str, Any]]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for event in self.snapshot():
                if predicate(*event):
                    return event
            time.sleep(0.05)
        raise AssertionError(f"no matching domain event in {timeout}s: {[e[0] for e in self.snapshot()]}")


def serve_notify(share_dir: Path) -> NotifyRecorder:
    recorder = NotifyRecorder()

    def register(server: grpc.Server) -> None:
        notify_pb2_grpc.add_NotifyServicer_to_server(recorder, server)
        register_notify_info(server)

    recorder.server = serve_unix(share_dir / NOTIFY_PIPE_SOCKET, register)
    return recorder


# -- launchers in pod-like mount namespaces -----------------------------------------------------


@dataclass
class LauncherPod:
    share_dir: Path
    vmi: dict[str, Any]
    process: subprocess.Popen[bytes]
    log_path: Path
    notify: NotifyRecorder | None = None
    pod_uid: str | None = None
    client: LauncherClient = field(init=False)

    def __post_init__(self) -> None:
        self.client = LauncherClient(cmd_socket_path(self.share_dir))

    @property
    def uid(self) -> str:
        return str(self.vmi["metadata"]["uid"])

    def in_pod(self, path: str) -> Path:
        """A path inside the launcher's mount namespace, seen from here.

        ``/var/run`` is an absolute symlink to ``/run``, which would resolve in our namespace, not the pod's.
        """
        if path.startswith("/var/run/"):
            path = path.removeprefix("/var")
        return Path(f"/proc/{self.process.pid}/root") / path.lstrip("/")

    @property
    def serial_log(self) -> Path:
        return self.in_pod(f"/var/run/kubevirt-private/{self.uid}/virt-serial0-log")

    @property
    def libvirt_socket(self) -> Path:
        return self.in_pod("/var/run/kubevirt-private/libvirt/sock/libvirt-sock")

    def serial_text(self) -> str:
        try:
            return self.serial_log.read_text(errors="replace")
        except OSError:
            return ""

    def wait_for_serial(self, text: str, timeout: float) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            content = self.serial_text()
            if text in content:
                return content
            if self.process.poll() is not None:
                break
            time.sleep(0.2)
        raise AssertionError(
            f"{text!r} not in the serial log after {timeout}s: {self.serial_text()[-500:]!r}\n{self.logs()}"
        )

    def last_tick(self) -> int:
        ticks = re.findall(r"tick (\d+)", self.serial_text())
        return int(ticks[-1]) if ticks else 0

    def wait_for_tick_after(self, tick: int, timeout: float = 30.0) -> int:
        # The guest ticks every second, but under TCG on a loaded 2-core machine it can stall for many.
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            current = self.last_tick()
            if current > tick:
                return current
            time.sleep(0.2)
        raise AssertionError(f"the guest printed nothing after tick {tick} in {timeout}s")

    def status(self) -> tuple[str, str]:
        domain = self.client.get_domain()
        assert domain is not None, "the launcher has no domain"
        return domain["Status"]["Status"], domain["Status"]["Reason"]

    def kubevirt_metadata(self) -> dict[str, Any]:
        domain = self.client.get_domain()
        assert domain is not None, "the launcher has no domain"
        result: dict[str, Any] = domain["Spec"]["Metadata"]["KubeVirt"]
        return result

    def logs(self) -> str:
        return self.log_path.read_text(errors="replace")[-4000:]

    def wait_exit(self, timeout: float) -> int:
        return self.process.wait(timeout)

    def domain_or_gone(self) -> object:
        """The launcher's domain, or None once the launcher has exited: with its domain deleted it ends on
        its own, and may be gone before the question is asked."""
        try:
            return self.client.get_domain()
        except LauncherDisconnectedError:
            return None


def start_launcher_pod(
    tmp: Path,
    guest: Path,
    vmi: dict[str, Any],
    *,
    grace_period: int = 5,
    notify: bool = False,
    extra: tuple[str, ...] = (),
    share: Path | None = None,
    private: Path | None = None,
    pod_uid: str | None = None,
    non_root: bool = False,
) -> LauncherPod:
    """``share`` and ``private`` (host directories, like a pod's emptyDirs) default to the test's
    ``share`` and a tmpfs seen only by the launcher. With ``pod_uid`` the launcher runs as that pod's
    process would (its cgroup, PID and network namespaces: :mod:`kubevirt_testing.pod_process`), which
    virt-handler requires before it enters the pod. With ``non_root`` it runs as KubeVirt's non-root
    launcher pod runs it (:func:`non_root_pod_steps`)."""
    share = share or tmp / "share"
    (share / "migrationproxy").mkdir(parents=True, exist_ok=True)
    if non_root:
        _own_for_non_root(share, share / "migrationproxy", *([private] if private else []))
    recorder = serve_notify(share) if notify else None
    if recorder is not None and non_root:
        _own_for_non_root(share / NOTIFY_PIPE_SOCKET)  # virt-handler gives it to the launcher's user
    log_path = tmp / "launcher.log"
    metadata = vmi["metadata"]
    command = [
        *(NON_ROOT_EXEC if non_root else ()),
        LAUNCHER,
        "--name", metadata["name"],
        "--namespace", metadata["namespace"],
        "--uid", metadata["uid"],
        "--grace-period-seconds", str(grace_period),
        "--qemu-timeout", "60s",
        "--force-emulation",
        "--libvirt-capabilities-cache", str(NON_ROOT_CAPS_CACHE if non_root else CAPS_CACHE),
        *(("--run-as-nonroot",) if non_root else ()),
        *extra,
    ]  # fmt: skip
    script = " && ".join(
        [
            "mkdir -p /run/kubevirt /run/kubevirt-private",
            f"mount --bind {share} /run/kubevirt",
            "mount -t tmpfs tmpfs /run/kubevirt-private",
            "mkdir -p /run/kubevirt-ephemeral-disks",
            "mount -t tmpfs tmpfs /run/kubevirt-ephemeral-disks",
            f"mount --bind {private} /run/kubevirt-private"
            if private
            else "mount -t tmpfs tmpfs /run/kubevirt-private",
            "mkdir -p /run/kubevirt/container-disks/kernel-boot",
            f"mount --bind -o ro {guest} /run/kubevirt/container-disks/kernel-boot",
            *(non_root_pod_steps(tmp) if non_root else ()),
            'exec "$@"',
        ]
    )
    shell = ["sh", "-c", script, "launcher", *command]
    argv = ["unshare", "--mount", "--propagation", "private", *shell]
    join = None
    if pod_uid is not None:
        argv, join = pod_process.in_pod_namespaces(shell), pod_process.join_cgroup(pod_uid)
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, preexec_fn=join
        )
    pod = LauncherPod(share, vmi, process, log_path, recorder, pod_uid=pod_uid)
    deadline = time.monotonic() + 30
    while not cmd_socket_path(share).exists():
        if process.poll() is not None or time.monotonic() > deadline:
            stop_launcher_pod(pod)
            raise AssertionError(f"the launcher did not become ready:\n{pod.logs()}")
        time.sleep(0.05)
    return pod


def _own_for_non_root(*paths: Path) -> None:
    """What the pod's fsGroup (or virt-handler) gives the non-root user."""
    for path in paths:
        os.chown(path, NON_ROOT_UID, NON_ROOT_UID)


def non_root_pod_steps(tmp: Path) -> list[str]:
    """Shell steps, as root in the launcher's mount namespace, that make it look like KubeVirt's non-root
    launcher pod before the launcher starts as its user: the image's passwd and group name the user qemu
    (107), the pod's emptyDirs (private, ephemeral disks, libvirt's runtime directory) are its, and so is
    the pod's /dev/net/tun (virt-handler hands the device plugin's node to a non-root VMI's user)."""
    passwd, group, tun = tmp / "passwd", tmp / "group", tmp / "tun"
    qemu = NON_ROOT_UID
    passwd.write_text(f"{Path('/etc/passwd').read_text()}qemu:x:{qemu}:{qemu}:qemu:/home/qemu:/bin/sh\n")
    group.write_text(f"{Path('/etc/group').read_text()}qemu:x:{qemu}:\n")  # a host's own 107 comes first
    if not tun.exists():
        os.mknod(tun, 0o600 | stat.S_IFCHR, os.makedev(10, 200))
    _own_for_non_root(tun)
    NON_ROOT_CAPS_CACHE.mkdir(parents=True, exist_ok=True)
    _own_for_non_root(NON_ROOT_CAPS_CACHE)
    volumes = "/run/kubevirt-private /run/kubevirt-ephemeral-disks /run/libvirt"
    return [
        f"mount --bind {passwd} /etc/passwd",
        f"mount --bind {group} /etc/group",
        f"mount --bind {tun} /dev/net/tun",
        "mkdir -p /run/libvirt",
        "mount -t tmpfs tmpfs /run/libvirt",
        f"chown {qemu}:{qemu} {volumes}",
    ]


def stop_launcher_pod(pod: LauncherPod) -> None:
    pod.client.close()
    if pod.notify is not None and pod.notify.server is not None:
        pod.notify.server.stop(grace=0)
    if pod.pod_uid is not None:
        pod_process.kill(pod.process)
    if pod.process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pod.process.pid, signal.SIGKILL)
        pod.process.wait(10)
    # libvirt daemonises QEMU out of the launcher's process group: find this VMI's guests by name.
    for pid in guest_pids(f"guest={pod.vmi['metadata']['namespace']}_{pod.vmi['metadata']['name']},"):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    if pod.pod_uid is not None:
        pod_process.remove_cgroup(pod.pod_uid)


def guest_pids(name_argument: str) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if (
            argv
            and argv[0].endswith(b"qemu-system-x86_64")
            and any(name_argument.encode() in a for a in argv)
        ):
            pids.append(int(entry.name))
    return pids


@pytest.fixture
def notify_server_factory() -> Iterator[Any]:
    recorders: list[NotifyRecorder] = []

    def start(share_dir: Path) -> NotifyRecorder:
        recorder = serve_notify(share_dir)
        recorders.append(recorder)
        return recorder

    yield start
    for recorder in recorders:
        if recorder.server is not None:
            recorder.server.stop(grace=0)


@pytest.fixture
def make_vmi() -> Any:
    return kernel_boot_vmi


@pytest.fixture
def guest_net_initrd() -> str:
    return NET_INITRD


@pytest.fixture
def guest_marker() -> str:
    return MARKER


@pytest.fixture
def launcher_pods(tmp_path: Path, test_guest: Path) -> Iterator[Any]:
    started: list[LauncherPod] = []

    def start(
        vmi: dict[str, Any], name: str = "pod", guest: Path | None = None, **options: Any
    ) -> LauncherPod:
        directory = tmp_path / name
        directory.mkdir(exist_ok=True)
        pod = start_launcher_pod(directory, guest or test_guest, vmi, **options)
        started.append(pod)
        return pod

    yield start
    for pod in started:
        stop_launcher_pod(pod)
