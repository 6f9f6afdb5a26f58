"""The test guests: small bootable disks and a kernel + initramfs, made from Debian packages without a
container engine, loop device or mount.

Debian's kernel boots a busybox initramfs. Its ``/init`` hands over to busybox's ``init``, whose boot script
prints :data:`BOOT_MARKER` on the serial port, loads the virtio, disk and ISO 9660 modules, mounts the
NoCloud ``cidata`` (or ConfigDrive ``config-2``) disk by its label and takes the hostname from its
meta-data, appends a boot record to its boot disk (in the flavours that keep them), asks for an address on
``eth0`` (taking the DHCP hostname when the meta-data named none), runs the user data when it is a shell
script and serves HTTP on port 80. ``init`` then keeps a ``getty`` login on ``ttyS0`` and powers the guest
off on ``poweroff`` ("The system is going down NOW!") or when its ACPI power button is pressed, which is how
a soft reboot without a guest agent reaches it (libvirt then resets it, and it boots again).

One recipe, several flavours (:data:`FLAVOURS`) that differ only in their accounts, console greeting and
boot records: the plain test guest (``root`` without a password), a CirrOS-compatible one (CirrOS 0.5's
banner, user ``cirros``/``gocubsgo`` with a ``$ `` prompt and ``sudo``, and a boot record per boot kept on
its boot disk, which its ``last`` lists like CirrOS's wtmp) and an Alpine-compatible one (``localhost
login:``, ``root`` without a password, a ``localhost:~# `` prompt).

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
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

BOOT_MARKER = "KUBEVIRT-PY-TEST-GUEST-BOOTED"
DISK_SIZE_KIB = 32 * 1024
KERNEL_ARGS = "console=ttyS0 quiet panic=-1"
PACKAGES = ("busybox-static",)
# What the guest loads, dependencies first (found through modules.dep): virtio disks and NICs, SATA and
# SCSI disks and CD-ROMs, the file systems of NoCloud and ConfigDrive disks and of the boot disk (FAT: vfat,
# its default code page 437 and I/O charset ascii), and the i6300esb watchdog (KubeVirt's on x86) behind
# /dev/watchdog.
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
    "i6300esb",
)
SUDO_SOURCE = Path(__file__).with_name("guest_sudo.c")
SUDO_GID = 27  # Debian's "sudo" group

# PID 1 until busybox's init takes over (init must be PID 1 for poweroff to reach it).
GUEST_INIT = """#!/bin/busybox sh
/bin/busybox mkdir -p /proc /sys /dev /run /tmp /mnt/cidata /www /usr/bin /usr/sbin /sbin
/bin/busybox --install -s
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
exec /sbin/init
"""

INITTAB = """::sysinit:/etc/rc.boot
ttyS0::respawn:/sbin/getty -L 115200 ttyS0 vt100
::ctrlaltdel:/sbin/poweroff
::shutdown:/bin/sync
"""

# What init runs before the login prompt, in the order a cloud image does it.
BOOT_SCRIPT = r"""#!/bin/sh
exec </dev/null >/dev/ttyS0 2>&1
echo @BOOT_MARKER@
for module in $(cat /etc/modules); do insmod "/lib/modules/$module.ko"; done
hostname -F /etc/hostname
chmod 1777 /tmp
ip link set lo up
# The cloud-init disk: an ISO 9660 volume labelled "cidata" (NoCloud) or "config-2" (ConfigDrive). Virtio
# disks are there once their module is loaded, SATA and SCSI ones are scanned in the background: look for
# up to 2 s of guest time, reading each disk's volume label (probing like findfs is slow under TCG).
cloud_init_disk() {
  for dev in /sys/class/block/vd* /sys/class/block/sd* /sys/class/block/sr*; do
    [ -e "$dev" ] || continue
    disk="/dev/${dev##*/}"
    label=$(dd if="$disk" bs=2048 skip=16 count=1 2>/dev/null | dd bs=1 skip=40 count=32 2>/dev/null)
    case "$(echo $label)" in cidata|CIDATA|config-2) echo "$disk"; return ;; esac
  done
}
source=""
give_up=$(($(cut -d. -f1 /proc/uptime) + 2))
while :; do
  source=$(cloud_init_disk)
  [ -n "$source" ] || [ "$(cut -d. -f1 /proc/uptime)" -ge "$give_up" ] && break
  sleep 0.1
done
userdata=""
if [ -n "$source" ] && mount -o ro "$source" /mnt/cidata; then
  echo "cloud-init source: $source"
  for candidate in /mnt/cidata/user-data /mnt/cidata/openstack/latest/user_data; do
    [ -f "$candidate" ] && userdata="$candidate" && break
  done
  # NoCloud's meta-data (JSON or YAML) names local-hostname, ConfigDrive's meta_data.json hostname.
  name=$(sed -n 's/.*"*local-hostname"*: *"*\([A-Za-z0-9.-]*\).*/\1/p' /mnt/cidata/meta-data 2>/dev/null)
  [ -z "$name" ] && name=$(sed -n 's/.*"hostname": *"\([A-Za-z0-9.-]*\)".*/\1/p' \
    /mnt/cidata/openstack/latest/meta_data.json 2>/dev/null)
  [ -n "$name" ] && hostname "$name" && : > /run/hostname-from-metadata
fi
# Flavours that keep boot records append this boot's to the boot disk (SATA disks given the same 2 s),
# meanwhile the network comes up; it is done before the power button is watched and the login offered.
record=""
[ -x /etc/rc.boot-record ] && { /etc/rc.boot-record "$give_up" & record=$!; }
if [ -e /sys/class/net/eth0 ]; then
  ip link set eth0 up
  udhcpc -i eth0 -s /etc/udhcpc.script -t 5 -T 1 -b -q
fi
if [ -n "$userdata" ] && [ "$(head -c 2 "$userdata")" = "#!" ]; then
  cp "$userdata" /run/user-data && chmod 700 /run/user-data && /run/user-data
fi
echo "<html><body>$(hostname)</body></html>" > /www/index.html
httpd -p 80 -h /www
[ -n "$record" ] && wait "$record"
# The power button's input device: any event on it (a press) powers the guest off, at once, or through
# init's shutdown (processes asked to end, a second later killed) in flavours that shut down like theirs.
power_off="poweroff -f"
[ -e /etc/power-button-shuts-down ] && power_off="poweroff"
for device in /sys/class/input/event*; do
  if [ "$(cat "$device/device/name" 2>/dev/null)" = "Power Button" ]; then
    (head -c 1 "/dev/input/${device##*/}" > /dev/null && echo "power button pressed" && $power_off) &
  fi
done
echo "test guest ready, up $(cut -d' ' -f1 /proc/uptime) s"
""".replace("@BOOT_MARKER@", BOOT_MARKER)

# busybox's udhcpc hands the lease to a script; this one configures the interface, route, resolver and,
# unless the meta-data named one, the hostname (KubeVirt's DHCP server hands out the VMI's).
UDHCPC_SCRIPT = """#!/bin/sh
case "$1" in
  bound|renew)
    ip addr flush dev "$interface"
    ip addr add "$ip/${mask:-24}" dev "$interface"
    [ -n "$router" ] && ip route replace default via "${router%% *}" dev "$interface"
    : > /etc/resolv.conf
    for server in $dns; do echo "nameserver $server" >> /etc/resolv.conf; done
    [ -n "$hostname" ] && [ ! -e /run/hostname-from-metadata ] && hostname "$hostname"
    echo "udhcpc: $interface has $ip"
    ;;
esac
exit 0
"""

# busybox-static resolves users through the C library, whose built-in default is not plain files.
NSSWITCH_CONF = """passwd: files
group: files
shadow: files
"""

# CirrOS keeps /var/log/wtmp on its disk, whose reboot records KubeVirt's soft-reboot spec counts (``last
# reboot``); this guest's root is the initramfs, so the boot script of the flavours that keep records runs
# this to append one line per boot ("reboot   system boot  <kernel release>  <date>") to ``boot-records`` on
# the FAT file system it booted from (labelled TESTGUEST; a containerDisk's writable overlay lasts as long as
# the VMI, so records survive a reboot but not a new VMI) and copy them to BOOT_RECORDS for ``last``. The
# disk is mounted only for that moment, so a reboot or power-off never finds it mounted. Without a writable
# boot disk (kernel boot, a read-only or missing disk) the guest boots on without a record.
BOOT_RECORDS = "/var/log/boot-records"
BOOT_RECORD_SCRIPT = r"""#!/bin/sh
give_up=${1:-0}
boot_disk() {
  for dev in /sys/class/block/vd* /sys/class/block/sd*; do
    [ -e "$dev" ] || continue
    disk="/dev/${dev##*/}"
    label=$(dd if="$disk" bs=512 count=1 2>/dev/null | dd bs=1 skip=43 count=11 2>/dev/null)
    [ "$(echo $label)" = TESTGUEST ] && echo "$disk" && return
  done
}
while :; do
  disk=$(boot_disk)
  [ -n "$disk" ] || [ "$(cut -d. -f1 /proc/uptime)" -ge "$give_up" ] && break
  sleep 0.1
done
[ -n "$disk" ] || { echo "boot record: no boot disk"; exit 0; }
mkdir -p /mnt/boot /var/log
# -w: no read-only fallback (busybox's mount takes one on a write-protected disk).
mount -w -t vfat -o noatime "$disk" /mnt/boot || { echo "boot record: $disk not mounted"; exit 0; }
line=$(printf '%-8s %-12s %-16s %s' reboot 'system boot' "$(uname -r)" "$(date '+%a %b %e %H:%M')")
if echo "$line" >> /mnt/boot/boot-records; then
  cp /mnt/boot/boot-records @BOOT_RECORDS@
  echo "boot record: $(wc -l < @BOOT_RECORDS@) on $disk"
else
  echo "boot record: $disk not writable"
fi
umount /mnt/boot
sync
""".replace("@BOOT_RECORDS@", BOOT_RECORDS)

SYSLINUX_CFG = f"""DEFAULT linux
PROMPT 0
TIMEOUT 0
LABEL linux
  KERNEL vmlinuz
  APPEND initrd=initrd.gz {KERNEL_ARGS}
"""


@dataclass(frozen=True)
class Flavour:
    """What sets one test guest apart: its name, accounts and console greeting."""

    name: str  # the image's name and its disk file's stem
    hostname: str  # until the meta-data or DHCP name another
    passwd: str
    group: str
    shadow: str = ""
    issue: str = ""  # what getty prints above the login prompt
    profile: str = ""  # /etc/profile of login shells
    homes: Mapping[str, int] = field(default_factory=dict)  # home folder -> owner (uid = gid)
    sudo: bool = False  # /usr/bin/sudo for the "sudo" group
    # busybox setuid root: the applets that may run privileged (ping) do, the others drop root.
    setuid_busybox: bool = False
    # Executables ahead of busybox's applets of the same name (its --install keeps existing files).
    programs: Mapping[str, str] = field(default_factory=dict)
    boot_records: bool = False  # a record per boot on the boot disk (BOOT_RECORD_SCRIPT)
    # The power button starts init's shutdown (CirrOS's acpid runs poweroff) instead of powering off at
    # once: a shell stays a second longer, so what a user types right after the press still runs there.
    power_button_shuts_down: bool = False

    @property
    def disk_name(self) -> str:
        return f"{self.name}.img"

    def files(self) -> dict[str, str]:
        out = {
            "etc/hostname": f"{self.hostname}\n",
            "etc/passwd": self.passwd,
            "etc/group": self.group,
        }
        out |= {"etc/shadow": self.shadow} if self.shadow else {}
        out |= {"etc/issue": self.issue} if self.issue else {}
        out |= {"etc/profile": self.profile} if self.profile else {}
        out |= {"etc/power-button-shuts-down": ""} if self.power_button_shuts_down else {}
        return out

    def digest_parts(self) -> tuple[str, ...]:
        homes = " ".join(f"{home}={owner}" for home, owner in sorted(self.homes.items()))
        sudo = SUDO_SOURCE.read_text() if self.sudo else ""
        files = (f"{path}\0{text}" for path, text in sorted(self.files().items()))
        programs = (f"{path}\0{text}" for path, text in sorted(self.programs.items()))
        records = BOOT_RECORD_SCRIPT if self.boot_records else ""
        return (self.name, *files, homes, sudo, f"setuid busybox: {self.setuid_busybox}", *programs, records)


TEST_GUEST = Flavour(
    name="test-guest",
    hostname="testguest",
    passwd="root::0:0:root:/root:/bin/sh\n",
    group="root:x:0:\n",
    homes={"root": 0},
)
# CirrOS's netcat keeps a listening server with -k (KubeVirt's tests start theirs with "nc -klp PORT -e
# ..."); Debian's busybox keeps one with a second -l: the option is translated, the rest passed on. Its shell
# runs its own applets ahead of PATH, so login shells reach this through a function of the same name.
CIRROS_NETCAT = """#!/bin/sh
for arg do
  shift
  case $arg in
    -*k*) arg=$(echo "$arg" | sed s/k/l/) ;;
  esac
  set -- "$@" "$arg"
done
exec /bin/busybox nc "$@"
"""
# CirrOS's last (util-linux's or busybox's, reading wtmp): here the boots the boot disk recorded, newest
# first, for the users named (boots are the pseudo-user reboot) or all; logins are not recorded. busybox's
# own applet takes no arguments and reads a binary wtmp, so login shells reach this through a function too.
CIRROS_LAST = r"""#!/bin/sh
for name do
  case $name in -*) echo "usage: last [USER]..." >&2; exit 1 ;; esac
done
if [ ! -r @BOOT_RECORDS@ ]; then
  echo "last: cannot open @BOOT_RECORDS@: the boot disk keeps no boot records" >&2
  exit 1
fi
tac @BOOT_RECORDS@ | awk -v names="$*" '
  BEGIN { count = split(names, listed, " "); for (i = 1; i <= count; i++) wanted[listed[i]] = 1 }
  count == 0 || ($1 in wanted)'
printf '\nwtmp begins %s\n' "$(sed -n '1s/^reboot *system boot *[^ ]* *//p' @BOOT_RECORDS@)"
""".replace("@BOOT_RECORDS@", BOOT_RECORDS)
CIRROS_BANNER = "login as 'cirros' user. default password: 'gocubsgo'. use 'sudo' for root."
CIRROS_PASSWORD = "gocubsgo"
CIRROS_COMPATIBLE = Flavour(
    name="test-guest-cirros-compatible",
    hostname="cirros",
    passwd="root:x:0:0:root:/root:/bin/sh\ncirros:x:1000:1000:cirros:/home/cirros:/bin/sh\n",
    group="root:x:0:\nsudo:x:27:cirros\ncirros:x:1000:\n",
    # root is locked; cirros's password is gocubsgo (busybox mkpasswd -m sha512 gocubsgo kvpycirros).
    shadow="root:*:19000:0:99999:7:::\n"
    "cirros:$6$kvpycirros$VINUyNS5EZPkylK7Ypi.xi7b7JpWwhs8IIDC.TD7DKNbt8riEYWwbMKX/GZl3rk7cHGPKkA0PktvTy98WY2b6/"
    ":19000:0:99999:7:::\n",
    issue=f"{CIRROS_BANNER}\n",
    # busybox's shell runs its applets ahead of PATH: functions reach CirrOS's nc and last (programs).
    profile="export PS1='\\$ '\n" + 'nc() { /usr/bin/nc "$@"; }\n' + 'last() { /usr/bin/last "$@"; }\n',
    homes={"root": 0, "home/cirros": 1000},
    sudo=True,
    setuid_busybox=True,
    programs={"usr/bin/nc": CIRROS_NETCAT, "usr/bin/last": CIRROS_LAST},
    boot_records=True,
    power_button_shuts_down=True,
)
ALPINE_COMPATIBLE = Flavour(
    name="test-guest-alpine-compatible",
    hostname="localhost",
    passwd="root::0:0:root:/root:/bin/ash\n",
    group="root:x:0:\n",
    issue="Welcome to the Alpine-compatible test guest\n\n",
    # Alpine's prompt, "\\h:\\w\\$ ", with the home folder shown as ~ (busybox's \\w does not here).
    profile="""export PS1='\\h:$(if [ "$PWD" = "$HOME" ]; then echo "~"; else echo "$PWD"; fi)\\$ '\n""",
    homes={"root": 0},
)
FLAVOURS = (TEST_GUEST, CIRROS_COMPATIBLE, ALPINE_COMPATIBLE)
DISK_NAME = TEST_GUEST.disk_name


@dataclass(frozen=True)
class TestGuest:
    directory: Path
    flavour: Flavour = TEST_GUEST

    @property
    def disk(self) -> Path:
        return self.directory / self.flavour.disk_name

    @property
    def kernel(self) -> Path:
        return self.directory / "vmlinuz"

    @property
    def initrd(self) -> Path:
        return self.directory / "initrd.gz"

    def complete(self) -> bool:
        return self.disk.exists() and self.kernel.exists() and self.initrd.exists()


def recipe_digest(flavour: Flavour = TEST_GUEST) -> str:
    """Changes whenever what the guest is built from changes (it keys the cache)."""
    parts = (
        GUEST_INIT,
        INITTAB,
        BOOT_SCRIPT,
        UDHCPC_SCRIPT,
        NSSWITCH_CONF,
        SYSLINUX_CFG,
        " ".join(MODULES),
        " ".join(PACKAGES),
        str(DISK_SIZE_KIB),
        *flavour.digest_parts(),
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


def cpio_newc(
    entries: list[tuple[str, int, bytes]], owners: Mapping[str, tuple[int, int]] | None = None
) -> bytes:
    """A newc cpio archive (the initramfs format) of (name, mode, data) entries, owned by root unless
    ``owners`` maps a name to its (uid, gid)."""
    owners = owners or {}
    out = io.BytesIO()

    def pad(length: int) -> None:
        out.write(b"\0" * ((4 - length % 4) % 4))

    for inode, (name, mode, data) in enumerate([*entries, ("TRAILER!!!", 0, b"")], 1):
        encoded = name.encode() + b"\0"
        uid, gid = owners.get(name, (0, 0))
        fields = (inode, mode, uid, gid, 1, 0, len(data), 0, 0, 0, 0, len(encoded), 0)
        out.write(("070701" + "".join(f"{value:08x}" for value in fields)).encode() + encoded)
        pad(110 + len(encoded))
        out.write(data)
        pad(len(data))
    return out.getvalue()


@dataclass(frozen=True)
class Unpacked:
    """The Debian packages every flavour is made of, unpacked (and the sudo helper, once compiled)."""

    kernel_root: Path
    busybox: bytes
    sudo: Path


def _initramfs(flavour: Flavour, packages: Unpacked) -> bytes:
    modules_dir = next((packages.kernel_root / "lib/modules").iterdir())
    modules = _module_order(modules_dir, MODULES)
    parents = {str(parent) for home in flavour.homes for parent in Path(home).parents if str(parent) != "."}
    folders = [
        "bin",
        "dev",
        "etc",
        "lib",
        "lib/modules",
        "usr",
        "usr/bin",
        *sorted(parents | set(flavour.homes)),
    ]
    entries: list[tuple[str, int, bytes]] = [
        (folder, 0o40700 if folder in flavour.homes else 0o40755, b"") for folder in dict.fromkeys(folders)
    ]
    owners = {home: (uid, uid) for home, uid in flavour.homes.items()}
    entries += [
        ("bin/busybox", 0o104755 if flavour.setuid_busybox else 0o100755, packages.busybox),
        ("init", 0o100755, GUEST_INIT.encode()),
        ("etc/inittab", 0o100644, INITTAB.encode()),
        ("etc/rc.boot", 0o100755, BOOT_SCRIPT.encode()),
        ("etc/udhcpc.script", 0o100755, UDHCPC_SCRIPT.encode()),
        ("etc/nsswitch.conf", 0o100644, NSSWITCH_CONF.encode()),
        ("etc/modules", 0o100644, "".join(f"{path.stem}\n" for path in modules).encode()),
    ]
    entries += [
        (path, 0o100600 if path == "etc/shadow" else 0o100644, text.encode())
        for path, text in flavour.files().items()
    ]
    entries += [(path, 0o100755, text.encode()) for path, text in flavour.programs.items()]
    if flavour.boot_records:
        entries.append(("etc/rc.boot-record", 0o100755, BOOT_RECORD_SCRIPT.encode()))
    if flavour.sudo:
        entries.append(("usr/bin/sudo", 0o104750, packages.sudo.read_bytes()))
        owners["usr/bin/sudo"] = (0, SUDO_GID)
    entries += [
        (f"lib/modules/{path.stem}.ko", 0o100644, (modules_dir / path).read_bytes()) for path in modules
    ]
    return gzip.compress(cpio_newc(entries, owners), 9)


def _fat_disk(target: Path, kernel: Path, initrd: Path, syslinux_cfg: Path) -> None:
    _run(["mkfs.vfat", "-n", "TESTGUEST", "-C", str(target), str(DISK_SIZE_KIB)])
    for source, name in ((kernel, "vmlinuz"), (initrd, "initrd.gz"), (syslinux_cfg, "syslinux.cfg")):
        _run(["mcopy", "-i", str(target), str(source), f"::{name}"])
    # syslinux writes its boot sector and ldlinux.* through mtools: no mount needed.
    _run(["syslinux", "--install", str(target)])


def _unpack(package: str, work: Path) -> Unpacked:
    os.chmod(work, 0o755)  # apt-get download drops to its sandbox user, which must write here
    for deb, name in ((_download(package, work), "kernel"), *((_download(p, work), p) for p in PACKAGES)):
        _run(["dpkg-deb", "-x", str(deb), str(work / name)])
    modules_dir = next((work / "kernel/lib/modules").iterdir())
    # The package leaves modules.dep to depmod at installation time.
    _run(["depmod", "-b", str(work / "kernel"), modules_dir.name])
    sudo = work / "sudo"
    _run(["gcc", "-static", "-Os", "-s", "-Wall", "-Wextra", "-Werror", "-o", str(sudo), str(SUDO_SOURCE)])
    return Unpacked(work / "kernel", (work / "busybox-static/bin/busybox").read_bytes(), sudo)


def _make(flavour: Flavour, packages: Unpacked, out: Path) -> None:
    out.mkdir()
    shutil.copy(next((packages.kernel_root / "boot").glob("vmlinuz-*")), out / "vmlinuz")
    (out / "initrd.gz").write_bytes(_initramfs(flavour, packages))
    (out / "syslinux.cfg").write_text(SYSLINUX_CFG)
    _fat_disk(out / flavour.disk_name, out / "vmlinuz", out / "initrd.gz", out / "syslinux.cfg")
    (out / "syslinux.cfg").unlink()


def build_all(cache: Path, flavours: tuple[Flavour, ...] = FLAVOURS) -> dict[str, TestGuest]:
    """Builds each flavour once per recipe under ``cache/test-guest/<name>-<kernel>-<digest>`` (the packages
    are fetched and unpacked once for all of them); returns the guests by flavour name."""
    package = kernel_package()
    root = cache / "test-guest"
    guests = {f.name: TestGuest(root / f"{f.name}-{package}-{recipe_digest(f)}", f) for f in flavours}
    missing = [guest for guest in guests.values() if not guest.complete()]
    if missing:
        root.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=root) as work_dir:
            packages = _unpack(package, Path(work_dir))
            for guest in missing:
                out = Path(work_dir) / f"out-{guest.flavour.name}"
                _make(guest.flavour, packages, out)
                shutil.rmtree(guest.directory, ignore_errors=True)
                out.rename(guest.directory)
    for guest in guests.values():
        # Older builds of this flavour (another recipe or kernel) are stale.
        for stale in root.glob(f"{guest.flavour.name}-linux-image-*"):
            if stale.is_dir() and stale != guest.directory:
                shutil.rmtree(stale, ignore_errors=True)
    return guests


def build(cache: Path, flavour: Flavour = TEST_GUEST) -> TestGuest:
    """Builds one flavour (see :func:`build_all`); returns where it is."""
    return build_all(cache, (flavour,))[flavour.name]
