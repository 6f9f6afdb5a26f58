"""The test guest: a small bootable disk and a kernel + initramfs, made from Debian packages without a
container engine, loop device or mount.

Debian's kernel boots a busybox initramfs whose ``/init`` prints :data:`BOOT_MARKER` on the serial port,
loads the virtio, disk and ISO 9660 modules, mounts the NoCloud ``cidata`` (or ConfigDrive ``config-2``)
disk by its label and runs the user data when it is a shell script, asks for an address on ``eth0``, serves
HTTP on port 80 and leaves a login prompt (``root``, no password) on ``ttyS0``. It powers off when its ACPI
power button is pressed, which is how a soft reboot without a guest agent reaches it (libvirt then resets
it, and it boots again).

The disk is an unpartitioned FAT file system (``mkfs.vfat``, files added with mtools) with syslinux as its
boot sector, so SeaBIOS boots it. Everything is cached under ``$KUBEVIRT_CACHE/test-guest``.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

BOOT_MARKER = "KUBEVIRT-PY-TEST-GUEST-BOOTED"
DISK_NAME = "test-guest.img"
DISK_SIZE_KIB = 32 * 1024
KERNEL_ARGS = "console=ttyS0 quiet panic=-1"
PACKAGES = ("busybox-static",)
# What the guest loads, dependencies first (found through modules.dep): virtio disks and NICs, SATA and
# SCSI disks and CD-ROMs, and the file systems of NoCloud and ConfigDrive disks.
MODULES = (
    "virtio_pci",
    "virtio_blk",
    "virtio_scsi",
    "virtio_net",
    "ahci",
    "sd_mod",
    "sr_mod",
    "isofs",
    "vfat",
    "nls_cp437",
    "nls_iso8859_1",
    "nls_ascii",
    "button",
    "evdev",
)

GUEST_INIT = f"""#!/bin/busybox sh
/bin/busybox mkdir -p /proc /sys /dev /run /tmp /mnt/cidata /www /root /usr/bin /usr/sbin /sbin
/bin/busybox --install -s
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
exec </dev/console >/dev/ttyS0 2>&1
echo {BOOT_MARKER}
for module in $(cat /etc/modules); do insmod "/lib/modules/$module.ko"; done
hostname "$(cat /etc/hostname)"
ip link set lo up
# The cloud-init disk: NoCloud's "cidata" or ConfigDrive's "config-2"; its devices may appear late.
source=""
i=0
while [ -z "$source" ] && [ $i -lt 30 ]; do
  for label in cidata CIDATA config-2; do
    [ -z "$source" ] && source=$(findfs "LABEL=$label" 2>/dev/null)
  done
  [ -z "$source" ] && sleep 0.1
  i=$((i+1))
done
userdata=""
if [ -n "$source" ] && mount -o ro "$source" /mnt/cidata; then
  echo "cloud-init source: $source"
  for candidate in /mnt/cidata/user-data /mnt/cidata/openstack/latest/user_data; do
    [ -f "$candidate" ] && userdata="$candidate" && break
  done
  name=$(sed -n 's/^local-hostname: *//p' /mnt/cidata/meta-data 2>/dev/null)
  [ -n "$name" ] && hostname "$name"
fi
if [ -n "$userdata" ] && [ "$(head -c 2 "$userdata")" = "#!" ]; then
  cp "$userdata" /run/user-data && chmod 700 /run/user-data && /run/user-data
fi
if [ -e /sys/class/net/eth0 ]; then
  ip link set eth0 up
  udhcpc -i eth0 -s /etc/udhcpc.script -t 5 -T 1 -b -q
fi
echo "<html><body>$(hostname)</body></html>" > /www/index.html
httpd -p 80 -h /www
# The power button's input device: any event on it (a press) powers the guest off.
for device in /sys/class/input/event*; do
  if [ "$(cat "$device/device/name" 2>/dev/null)" = "Power Button" ]; then
    (head -c 1 "/dev/input/${{device##*/}}" > /dev/null && echo "power button pressed" && poweroff -f) &
  fi
done
echo "test guest ready"
while true; do
  getty -L 115200 ttyS0 vt100
done
"""

# busybox's udhcpc hands the lease to a script; this one configures the interface, route and resolver.
UDHCPC_SCRIPT = """#!/bin/sh
case "$1" in
  bound|renew)
    ip addr flush dev "$interface"
    ip addr add "$ip/${mask:-24}" dev "$interface"
    [ -n "$router" ] && ip route replace default via "${router%% *}" dev "$interface"
    : > /etc/resolv.conf
    for server in $dns; do echo "nameserver $server" >> /etc/resolv.conf; done
    echo "udhcpc: $interface has $ip"
    ;;
esac
exit 0
"""

SYSLINUX_CFG = f"""DEFAULT linux
PROMPT 0
TIMEOUT 0
LABEL linux
  KERNEL vmlinuz
  APPEND initrd=initrd.gz {KERNEL_ARGS}
"""


@dataclass(frozen=True)
class TestGuest:
    directory: Path

    @property
    def disk(self) -> Path:
        return self.directory / DISK_NAME

    @property
    def kernel(self) -> Path:
        return self.directory / "vmlinuz"

    @property
    def initrd(self) -> Path:
        return self.directory / "initrd.gz"


def recipe_digest() -> str:
    """Changes whenever what the guest is built from changes (it keys the cache)."""
    parts = (
        GUEST_INIT,
        UDHCPC_SCRIPT,
        SYSLINUX_CFG,
        " ".join(MODULES),
        " ".join(PACKAGES),
        str(DISK_SIZE_KIB),
    )
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:16]


def _run(argv: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(argv, capture_output=True, text=True, check=False, **kwargs)  # type: ignore[call-overload]
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed ({result.returncode}): {result.stderr.strip()[-2000:]}")
    return result  # type: ignore[no-any-return]


def kernel_package() -> str:
    """The versioned kernel package ``linux-image-amd64`` stands for."""
    for line in _run(["apt-cache", "depends", "linux-image-amd64"]).stdout.splitlines():
        line = line.strip()
        if line.startswith("Depends: linux-image-"):
            return line.split()[1]
    raise RuntimeError("linux-image-amd64 depends on no kernel package")


def _download(package: str, into: Path) -> Path:
    if subprocess.run(
        ["apt-get", "download", package], cwd=into, capture_output=True, check=False
    ).returncode:
        _run(["apt-get", "update", "-qq"])
        _run(["apt-get", "download", package], cwd=into)
    found = sorted(into.glob(f"{package}_*.deb"))
    if not found:
        raise RuntimeError(f"apt-get download {package} produced no package")
    return found[-1]


def _module_order(modules_dir: Path, wanted: tuple[str, ...]) -> list[Path]:
    """The modules' files (relative to ``modules_dir``), each after the modules it depends on."""
    depends: dict[str, list[str]] = {}
    by_name: dict[str, str] = {}
    for line in (modules_dir / "modules.dep").read_text().splitlines():
        path, _, needs = line.partition(":")
        depends[path] = needs.split()
        by_name[Path(path).name.removesuffix(".ko").replace("-", "_")] = path
    ordered: list[str] = []

    def visit(path: str) -> None:
        if path in ordered:
            return
        for need in depends.get(path, []):
            visit(need)
        ordered.append(path)

    for name in wanted:
        if name not in by_name:
            raise RuntimeError(f"the kernel has no module {name}")
        visit(by_name[name])
    return [Path(path) for path in ordered]


def cpio_newc(entries: list[tuple[str, int, bytes]]) -> bytes:
    """A newc cpio archive (the initramfs format) of (name, mode, data) entries, owned by root."""
    out = io.BytesIO()

    def pad(length: int) -> None:
        out.write(b"\0" * ((4 - length % 4) % 4))

    for inode, (name, mode, data) in enumerate([*entries, ("TRAILER!!!", 0, b"")], 1):
        encoded = name.encode() + b"\0"
        fields = (inode, mode, 0, 0, 1, 0, len(data), 0, 0, 0, 0, len(encoded), 0)
        out.write(("070701" + "".join(f"{value:08x}" for value in fields)).encode() + encoded)
        pad(110 + len(encoded))
        out.write(data)
        pad(len(data))
    return out.getvalue()


def _initramfs(kernel_root: Path, busybox: bytes) -> bytes:
    modules_dir = next((kernel_root / "lib/modules").iterdir())
    # The package leaves modules.dep to depmod at installation time.
    _run(["depmod", "-b", str(kernel_root), modules_dir.name])
    modules = _module_order(modules_dir, MODULES)
    entries: list[tuple[str, int, bytes]] = [
        (folder, 0o40755, b"") for folder in ("bin", "dev", "etc", "lib", "lib/modules")
    ]
    entries += [
        ("bin/busybox", 0o100755, busybox),
        ("init", 0o100755, GUEST_INIT.encode()),
        ("etc/udhcpc.script", 0o100755, UDHCPC_SCRIPT.encode()),
        ("etc/hostname", 0o100644, b"testguest\n"),
        ("etc/passwd", 0o100644, b"root::0:0:root:/root:/bin/sh\n"),
        ("etc/group", 0o100644, b"root:x:0:\n"),
        ("etc/modules", 0o100644, "".join(f"{path.stem}\n" for path in modules).encode()),
    ]
    entries += [
        (f"lib/modules/{path.stem}.ko", 0o100644, (modules_dir / path).read_bytes()) for path in modules
    ]
    return gzip.compress(cpio_newc(entries), 9)


def _fat_disk(target: Path, kernel: Path, initrd: Path, syslinux_cfg: Path) -> None:
    _run(["mkfs.vfat", "-n", "TESTGUEST", "-C", str(target), str(DISK_SIZE_KIB)])
    for source, name in ((kernel, "vmlinuz"), (initrd, "initrd.gz"), (syslinux_cfg, "syslinux.cfg")):
        _run(["mcopy", "-i", str(target), str(source), f"::{name}"])
    # syslinux writes its boot sector and ldlinux.* through mtools: no mount needed.
    _run(["syslinux", "--install", str(target)])


def build(cache: Path) -> TestGuest:
    """Builds the guest once per recipe under ``cache/test-guest/<digest>``; returns where it is."""
    package = kernel_package()
    root = cache / "test-guest"
    guest = TestGuest(root / f"{package}-{recipe_digest()}")
    if guest.disk.exists() and guest.kernel.exists() and guest.initrd.exists():
        return guest
    root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=root) as work_dir:
        work = Path(work_dir)
        os.chmod(work, 0o755)  # apt-get download drops to its sandbox user, which must write here
        for deb, name in ((_download(package, work), "kernel"), *((_download(p, work), p) for p in PACKAGES)):
            _run(["dpkg-deb", "-x", str(deb), str(work / name)])
        out = work / "out"
        out.mkdir()
        shutil.copy(next((work / "kernel/boot").glob("vmlinuz-*")), out / "vmlinuz")
        busybox = (work / "busybox-static/bin/busybox").read_bytes()
        (out / "initrd.gz").write_bytes(_initramfs(work / "kernel", busybox))
        (work / "syslinux.cfg").write_text(SYSLINUX_CFG)
        _fat_disk(out / DISK_NAME, out / "vmlinuz", out / "initrd.gz", work / "syslinux.cfg")
        shutil.rmtree(guest.directory, ignore_errors=True)
        out.rename(guest.directory)
    for stale in root.iterdir():
        if stale.is_dir() and stale != guest.directory and stale.name.startswith("linux-image-"):
            shutil.rmtree(stale, ignore_errors=True)
    return guest
