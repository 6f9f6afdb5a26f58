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

One recipe, several flavours (:data:`FLAVOURS`) that differ in their accounts, console greeting, boot
records and what they run besides: the plain test guest (``root`` without a password), a CirrOS-compatible
one (CirrOS 0.5's banner, user ``cirros``/``gocubsgo`` with a ``$ `` prompt and ``sudo``, and a boot record
per boot kept on its boot disk, which its ``last`` lists like CirrOS's wtmp), an Alpine-compatible one
(``localhost login:``, ``root`` without a password, a ``localhost:~# `` prompt) and a Fedora-compatible one
(Fedora's login, os-release and prompt, user ``fedora``/``fedora`` with ``sudo``, and Debian's QEMU guest
agent and an SSH server, whose programs and shared libraries come from Debian packages too).

The disk is an unpartitioned FAT file system (``mkfs.vfat``, files added with mtools) with syslinux as its
boot sector, so SeaBIOS boots it; the Fedora-compatible guest's is partitioned (syslinux's MBR, that FAT
file system, an ext4 file system it mounts at :data:`DATA_MOUNT` for its agent to report and freeze).
Everything is cached under ``$KUBEVIRT_CACHE/test-guest``.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import shutil
import struct
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
# /dev/watchdog; virtio-mem, through which memory is plugged into a running guest.
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
    "virtio_mem",
)
SUDO_SOURCE = Path(__file__).with_name("guest_sudo.c")
SUDO_GID = 27  # Debian's "sudo" group
# Where the shared libraries of the programs taken from Debian packages go: a folder Debian's dynamic linker
# searches without an ld.so.cache.
LIBRARY_DIR = "lib/x86_64-linux-gnu"
# The data file system of flavours that have one (Flavour.data_partition_kib): its label, its root folder's
# owner (uid = gid), its UUID (fixed, so that builds differ less), and where the guest mounts it.
DATA_LABEL = "testguest-data"
DATA_OWNER = 1000
DATA_UUID = "6b7a1c2e-5f0d-4e8a-9c3b-7d2e1f4a5b60"
DATA_MOUNT = "/data"
# The partitioned disk's boot code (Debian's syslinux package, whose installer the disks use): it starts
# the active partition's boot sector.
SYSLINUX_MBR = Path("/usr/lib/SYSLINUX/mbr.bin")
PARTITION_START = 2048  # sectors: the first partition at 1 MiB, as partitioning tools place it

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
# Memory and vCPUs plugged in while the guest runs come online by themselves, as a distribution's udev
# rules bring them: memory blocks through the kernel's auto-online policy (set before virtio-mem loads), vCPUs
# (which arrive offline) by a loop that only runs where vCPUs can be added and forks nothing.
echo online > /sys/devices/system/memory/auto_online_blocks
if [ "$(cat /sys/devices/system/cpu/possible)" != "$(cat /sys/devices/system/cpu/present)" ]; then
  (while sleep 1; do
    for cpu in /sys/devices/system/cpu/cpu[0-9]*/online; do  # cpu0 has none: the pattern may stay as is
      [ -e "$cpu" ] && read -r state < "$cpu" && [ "$state" = 0 ] && echo 1 > "$cpu"
    done
  done) &
fi
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
    """What sets one test guest apart: its name, accounts, console greeting and what it runs besides."""

    name: str  # the image's name and its disk file's stem
    hostname: str  # until the meta-data or DHCP name another
    passwd: str
    group: str
    shadow: str = ""
    issue: str = ""  # what getty prints above the login prompt
    profile: str = ""  # /etc/profile of login shells
    homes: Mapping[str, int] = field(default_factory=dict)  # home folder -> owner (uid = gid)
    sudo: bool = False  # /usr/bin/sudo for the group sudo_gid
    # busybox setuid root: the applets that may run privileged (ping) do, the others drop root.
    setuid_busybox: bool = False
    # Executables ahead of busybox's applets of the same name (its --install keeps existing files).
    programs: Mapping[str, str] = field(default_factory=dict)
    boot_records: bool = False  # a record per boot on the boot disk (BOOT_RECORD_SCRIPT)
    # The power button starts init's shutdown (CirrOS's acpid runs poweroff) instead of powering off at
    # once: a shell stays a second longer, so what a user types right after the press still runs there.
    power_button_shuts_down: bool = False
    # The group whose members may run sudo (Debian's "sudo", Fedora's "wheel").
    sudo_gid: int = SUDO_GID
    more_files: Mapping[str, str] = field(default_factory=dict)  # more plain files: path -> text
    # Programs taken from Debian packages: guest path -> (package, path in the package). The shared libraries
    # they need come from ``library_packages`` (into LIBRARY_DIR, with the program interpreter they name).
    debian_programs: Mapping[str, tuple[str, str]] = field(default_factory=dict)
    library_packages: tuple[str, ...] = ()
    links: Mapping[str, str] = field(default_factory=dict)  # symbolic links: path -> target
    modules: tuple[str, ...] = ()  # kernel modules loaded after MODULES
    inittab: str = ""  # lines after INITTAB's
    # An ext4 file system of this size behind the boot file system on the disk (then partitioned: MBR,
    # the FAT file system, this one), labelled DATA_LABEL and owned by DATA_OWNER; 0: the FAT disk alone.
    data_partition_kib: int = 0

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
        out |= self.more_files
        return out

    def debian_packages(self) -> tuple[str, ...]:
        """The Debian packages this flavour takes programs and libraries from, beyond PACKAGES."""
        programs = (package for package, _ in self.debian_programs.values())
        return tuple(sorted({*programs, *self.library_packages}))

    def digest_parts(self) -> tuple[str, ...]:
        homes = " ".join(f"{home}={owner}" for home, owner in sorted(self.homes.items()))
        sudo = SUDO_SOURCE.read_text() if self.sudo else ""
        files = (f"{path}\0{text}" for path, text in sorted(self.files().items()))
        programs = (f"{path}\0{text}" for path, text in sorted(self.programs.items()))
        records = BOOT_RECORD_SCRIPT if self.boot_records else ""
        base = (self.name, *files, homes, sudo, f"setuid busybox: {self.setuid_busybox}", *programs, records)
        # Only what a flavour sets counts, so that flavours without these keep their cache keys.
        debian = " ".join(
            f"{path}={package}:{source}" for path, (package, source) in sorted(self.debian_programs.items())
        )
        data = (
            f"{self.data_partition_kib} KiB at {PARTITION_START} {DATA_LABEL} {DATA_OWNER} {DATA_UUID}"
            if self.data_partition_kib
            else ""
        )
        extras = {
            "sudo gid": str(self.sudo_gid) if self.sudo_gid != SUDO_GID else "",
            "debian programs": debian,
            "library packages": " ".join(self.library_packages),
            "links": " ".join(f"{path}->{target}" for path, target in sorted(self.links.items())),
            "modules": " ".join(self.modules),
            "inittab": self.inittab,
            "data partition": data,
        }
        return base + tuple(f"{name}: {value}" for name, value in extras.items() if value)


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

# The Fedora-compatible guest stands in for KubeVirt's fedora-with-test-tooling: Fedora's console login
# (user fedora, password fedora, sudo for the wheel group, "[fedora@<host> ~]$ "), its os-release, and
# Debian's QEMU guest agent and an SSH server (dropbear, with OpenSSH's scp and sftp-server), kept running
# by init and stopped and started with "systemctl ... qemu-guest-agent" or "... sshd". Its disk also holds
# an ext4 file system mounted at DATA_MOUNT, which the agent reports and freezes.
FEDORA_PASSWORD = "fedora"
FEDORA_RELEASE = "Fedora release 39 (Thirty Nine)\n"
FEDORA_OS_RELEASE = """NAME="Fedora Linux"
VERSION="39 (Cloud Edition)"
ID=fedora
VERSION_ID=39
VERSION_CODENAME=""
PLATFORM_ID="platform:f39"
PRETTY_NAME="Fedora Linux 39 (Cloud Edition)"
ANSI_COLOR="0;38;2;60;110;180"
LOGO=fedora-logo-icon
CPE_NAME="cpe:/o:fedoraproject:fedora:39"
DEFAULT_HOSTNAME="fedora"
REDHAT_BUGZILLA_PRODUCT="Fedora"
REDHAT_BUGZILLA_PRODUCT_VERSION=39
REDHAT_SUPPORT_PRODUCT="Fedora"
REDHAT_SUPPORT_PRODUCT_VERSION=39
VARIANT="Cloud Edition"
VARIANT_ID=cloud
"""
# The agent's port: the virtio-serial port libvirt names so (KubeVirt's guest agent channel).
AGENT_PORT = "org.qemu.guest_agent.0"
# After the common boot script (with "stop": at shutdown): what Fedora's services need. Folders, utmp
# (where login records sessions and the agent's guest-get-users reads them), pseudo-terminals for SSH
# sessions, a system log, the disks' serial numbers where the agent's libudev reads what udev would have
# recorded, and the data file system, mounted for the guest's life (read-only or unmounted at shutdown).
FEDORA_BOOT_SCRIPT = r"""#!/bin/sh
exec </dev/null >/dev/ttyS0 2>&1
if [ "$1" = stop ]; then
  grep -q " @DATA_MOUNT@ " /proc/mounts && umount -r @DATA_MOUNT@
  exit 0
fi
mkdir -p /var/log /var/lib /var/tmp /etc/dropbear /run/services /dev/pts @DATA_MOUNT@
chmod 1777 /var/tmp
touch /run/utmp /var/log/wtmp /var/log/lastlog
mount -t devpts -o gid=5,mode=620,ptmxmode=666 devpts /dev/pts
syslogd
for device in /sys/class/block/*; do
  serial=$(cat "$device/serial" 2>/dev/null || cat "$device/../serial" 2>/dev/null)  # a disk's, a partition's
  [ -n "$serial" ] || continue
  mkdir -p /run/udev/data
  echo "E:ID_SERIAL=$serial" > "/run/udev/data/b$(cat "$device/dev")"
done
# The data file system: a partition whose ext4 label (at byte 120 of the superblock) is ours; SATA and
# SCSI disks get up to 2 s to show up.
data_partition() {
  for dev in /sys/class/block/vd* /sys/class/block/sd*; do
    [ -e "$dev/partition" ] || continue
    partition="/dev/${dev##*/}"
    label=$(dd if="$partition" bs=1024 skip=1 count=1 2>/dev/null | dd bs=1 skip=120 count=16 2>/dev/null)
    [ "$(echo $label)" = @DATA_LABEL@ ] && echo "$partition" && return
  done
}
give_up=$(($(cut -d. -f1 /proc/uptime) + 2))
while :; do
  data=$(data_partition)
  [ -n "$data" ] || [ "$(cut -d. -f1 /proc/uptime)" -ge "$give_up" ] && break
  sleep 0.1
done
if [ -z "$data" ]; then
  echo "data file system: none"
elif mount -t ext4 -o noatime "$data" @DATA_MOUNT@; then
  echo "data file system: $data on @DATA_MOUNT@"
else
  echo "data file system: $data not mounted"
fi
# cloud-init's SSH keys for its default user, from the JSON meta-data rc.boot mounted (NoCloud's
# public-keys, ConfigDrive's public_keys): every quoted value with a space in the map or list.
for file in /mnt/cidata/meta-data /mnt/cidata/openstack/latest/meta_data.json; do
  [ -f "$file" ] || continue
  tr -d '\n' < "$file" | awk '{
    if (!match($0, /"public[-_]keys"[ ]*:[ ]*[{[]/)) exit
    rest = substr($0, RSTART + RLENGTH)
    if (match(rest, /[]}]/)) rest = substr(rest, 1, RSTART - 1)
    while (match(rest, /"[^"]*"/)) {
      value = substr(rest, RSTART + 1, RLENGTH - 2)
      rest = substr(rest, RSTART + RLENGTH)
      if (index(value, " ")) print value
    }
  }'
done > /run/cloud-init-keys
if [ -s /run/cloud-init-keys ]; then
  mkdir -p /home/fedora/.ssh
  cat /run/cloud-init-keys >> /home/fedora/.ssh/authorized_keys
  chown -R 1000:1000 /home/fedora/.ssh
  chmod 700 /home/fedora/.ssh
  chmod 600 /home/fedora/.ssh/authorized_keys
  echo "cloud-init: $(wc -l < /run/cloud-init-keys) SSH keys for fedora"
fi
""".replace("@DATA_MOUNT@", DATA_MOUNT).replace("@DATA_LABEL@", DATA_LABEL)
# init keeps each service running through this (and starts it again when it ends). "systemctl stop" holds
# a service back with a file in /run/services, where the running one's process id is kept too.
FEDORA_SERVICE = r"""#!/bin/sh
service=$1
exec </dev/null >>"/var/log/$service.log" 2>&1
while [ -e "/run/services/$service.stopped" ]; do sleep 1; done
echo $$ > "/run/services/$service.pid"
case $service in
  qemu-guest-agent)
    # No udev: the port is found by its name and linked where udev would link it.
    port=""
    for candidate in /sys/class/virtio-ports/*; do
      [ "$(cat "$candidate/name" 2>/dev/null)" = @AGENT_PORT@ ] && port="/dev/${candidate##*/}"
    done
    if [ -z "$port" ]; then
      sleep 5  # no agent channel (yet)
      exit 0
    fi
    mkdir -p /dev/virtio-ports
    ln -sfn "$port" /dev/virtio-ports/@AGENT_PORT@
    BLACKLIST_RPC=""
    FSFREEZE_HOOK_PATHNAME=""
    . /etc/sysconfig/qemu-ga
    exec /usr/bin/qemu-ga --method=virtio-serial --path=/dev/virtio-ports/@AGENT_PORT@ \
      ${BLACKLIST_RPC:+--block-rpcs="$BLACKLIST_RPC"} ${FSFREEZE_HOOK_PATHNAME:+-F"$FSFREEZE_HOOK_PATHNAME"}
    ;;
  sshd)
    # Host keys are made at the first connection (-R), in /etc/dropbear.
    exec /usr/sbin/dropbear -F -R -p 22
    ;;
esac
echo "no service $service"
sleep 60
""".replace("@AGENT_PORT@", AGENT_PORT)
FEDORA_SERVICES = {"qemu-guest-agent": "qemu-ga", "sshd": "dropbear"}  # service -> its program
FEDORA_SYSTEMCTL = r"""#!/bin/sh
# systemctl for the services init keeps running: start, stop, restart, status and is-active act, the rest
# (enable, disable, daemon-reload...) changes nothing here.
action=${1:-status}
[ $# -gt 0 ] && shift
running() {
  pid=$(cat "/run/services/$1.pid" 2>/dev/null)
  [ -n "$pid" ] && [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$2" ]
}
wait_until() {
  tries=0
  while [ $tries -lt 100 ]; do
    "$@" && return 0
    sleep 0.1
    tries=$((tries + 1))
  done
  return 1
}
not() { ! "$@"; }
status=0
for unit do
  service=${unit%.service}
  case $service in
    @SERVICES@
    *) echo "Unit $unit could not be found." >&2; status=5; continue ;;
  esac
  case $action in
    start)
      rm -f "/run/services/$service.stopped"
      wait_until running "$service" "$program" ;;
    stop)
      mkdir -p /run/services
      : > "/run/services/$service.stopped"
      running "$service" "$program" && kill "$pid"
      wait_until not running "$service" "$program" ;;
    restart|try-restart|reload|reload-or-restart)
      rm -f "/run/services/$service.stopped"
      old=""
      running "$service" "$program" && old=$pid && kill "$pid"
      wait_until eval 'running "$service" "$program" && [ "$pid" != "$old" ]' ;;
    status|is-active)
      if running "$service" "$program"; then echo active; else echo inactive; status=3; fi ;;
    is-enabled) echo enabled ;;
  esac || status=1
done
exit $status
""".replace(
    "@SERVICES@",
    "\n    ".join(f"{service}) program={program} ;;" for service, program in FEDORA_SERVICES.items()),
)
# The agent's guest-shutdown runs "shutdown -h -P|-H|-r +0 MESSAGE" (the last of those options counts,
# as with systemd's); init does it.
FEDORA_SHUTDOWN = """#!/bin/sh
action=poweroff
for option do
  case $option in
    -r|--reboot) action=reboot ;;
    -H|--halt) action=halt ;;
    -h|-P|--poweroff) action=poweroff ;;
  esac
done
exec $action
"""
# busybox has no chpasswd applet; the agent's guest-set-user-password pipes "user:password" to this
# (with -e when the password is already hashed). New passwords are hashed with SHA-512, as Fedora's.
FEDORA_CHPASSWD = r"""#!/bin/sh
hashed=""
[ "$1" = -e ] && hashed=1
status=0
while IFS= read -r line || [ -n "$line" ]; do
  user=${line%%:*}
  password=${line#*:}
  if [ -n "$hashed" ]; then
    hash=$password
  else
    hash=$(printf '%s' "$password" | mkpasswd -m sha512) || { status=1; continue; }
  fi
  if ! user=$user awk -F: '$1 == ENVIRON["user"] { found = 1 } END { exit !found }' /etc/shadow; then
    echo "chpasswd: no user $user" >&2
    status=1
    continue
  fi
  user=$user hash=$hash awk -F: -v OFS=: '$1 == ENVIRON["user"] { $2 = ENVIRON["hash"] } { print }' \
    /etc/shadow > /etc/shadow.new && chmod 600 /etc/shadow.new && mv /etc/shadow.new /etc/shadow || status=1
done
exit $status
"""
# qemu-ga's settings, read at each start as Fedora's service reads them (KubeVirt's tests append a
# BLACKLIST_RPC line through their user data). With a hook, qemu-ga logs "executing fsfreeze hook with arg
# 'freeze'" (and 'thaw') to the system log, which KubeVirt's snapshot specs look for with journalctl.
FEDORA_QEMU_GA_SETTINGS = """# Commands to disable, comma-separated (qemu-ga --block-rpcs).
BLACKLIST_RPC=
# Run with freeze before the file systems are frozen and with thaw after they are thawed.
FSFREEZE_HOOK_PATHNAME=/etc/qemu-ga/fsfreeze-hook
"""
FEDORA_FSFREEZE_HOOK = """#!/bin/sh
for hook in /etc/qemu-ga/fsfreeze-hook.d/*; do
  [ -x "$hook" ] && "$hook" "$@"
done
exit 0
"""
# Fedora's journal: here the system log that busybox's syslogd keeps (the agent logs there); options are
# ignored.
FEDORA_JOURNALCTL = """#!/bin/sh
exec cat /var/log/messages
"""
# User data written for bash ("#!/bin/bash") runs in busybox's shell.
FEDORA_BASH = """#!/bin/sh
exec /bin/sh "$@"
"""
FEDORA_INITTAB = """::sysinit:/etc/rc.fedora
::respawn:/usr/libexec/testguest-service qemu-guest-agent
::respawn:/usr/libexec/testguest-service sshd
::shutdown:/etc/rc.fedora stop
"""
FEDORA_COMPATIBLE = Flavour(
    name="test-guest-fedora-compatible",
    hostname="fedora",
    passwd="root:x:0:0:root:/root:/bin/sh\nfedora:x:1000:1000:fedora Cloud User:/home/fedora:/bin/sh\n",
    group="root:x:0:\ntty:x:5:\nwheel:x:10:fedora\nfedora:x:1000:\n",
    # root is locked; fedora's password is fedora (busybox mkpasswd -m sha512 fedora kvpyfedora).
    shadow="root:!locked:19000:0:99999:7:::\n"
    "fedora:$6$kvpyfedora$kFc2RhD/ONjTrh6gZ7kQO0HRdtefjwJG/QwvsMxsDE1Rxbfi1dalWHXy.nlL6ulozJRE3wa6CNfvLk6LqvVBq0"
    ":19000:0:99999:7:::\n",
    issue="Fedora Linux 39 (Cloud Edition)\nKernel \\r on an \\m (\\l)\n\n",
    # Fedora's prompt, "[\\u@\\h \\W]\\$ ", with the home folder shown as ~ (as bash's \\W does). "sudo su"
    # keeps it, so root's is "[root@<host> fedora]# " in fedora's home.
    profile="export PATH=/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin\n"
    """export PS1='[\\u@\\h $(if [ "$PWD" = "$HOME" ]; then echo "~"; else basename "$PWD"; fi)]\\$ '\n""",
    homes={"root": 0, "home/fedora": 1000},
    sudo=True,
    sudo_gid=10,
    setuid_busybox=True,
    programs={
        "etc/rc.fedora": FEDORA_BOOT_SCRIPT,
        "usr/libexec/testguest-service": FEDORA_SERVICE,
        "usr/bin/systemctl": FEDORA_SYSTEMCTL,
        "usr/bin/journalctl": FEDORA_JOURNALCTL,
        "sbin/shutdown": FEDORA_SHUTDOWN,
        "usr/sbin/chpasswd": FEDORA_CHPASSWD,
        "etc/qemu-ga/fsfreeze-hook": FEDORA_FSFREEZE_HOOK,
        "bin/bash": FEDORA_BASH,
    },
    power_button_shuts_down=True,
    more_files={
        "etc/os-release": FEDORA_OS_RELEASE,
        "etc/fedora-release": FEDORA_RELEASE,
        "etc/redhat-release": FEDORA_RELEASE,
        "etc/system-release": FEDORA_RELEASE,
        "etc/shells": "/bin/sh\n/bin/bash\n",
        "etc/sysconfig/qemu-ga": FEDORA_QEMU_GA_SETTINGS,
    },
    debian_programs={
        "usr/bin/qemu-ga": ("qemu-guest-agent", "usr/sbin/qemu-ga"),
        "usr/sbin/dropbear": ("dropbear-bin", "usr/sbin/dropbear"),
        # dropbear runs scp for "scp -O" and this for SFTP (OpenSSH's scp's default), at its built-in path.
        "usr/bin/scp": ("openssh-client", "usr/bin/scp"),
        "usr/lib/sftp-server": ("openssh-sftp-server", "usr/lib/openssh/sftp-server"),
    },
    # What those programs link (qemu-ga: glib, udev, numa, uring; dropbear: libtomcrypt, zlib, libcrypt).
    library_packages=(
        "libc6",
        "libglib2.0-0",
        "libpcre2-8-0",
        "libudev1",
        "libnuma1",
        "liburing2",
        "libtomcrypt1",
        "libtommath1",
        "libgmp10",
        "zlib1g",
        "libcrypt1",
    ),
    links={"var/run": "../run"},
    # The agent's virtio-serial port, and ext4 for the data file system (with the checksum it uses).
    modules=("virtio_console", "crc32c_generic", "ext4"),
    inittab=FEDORA_INITTAB,
    data_partition_kib=16 * 1024,
)
FLAVOURS = (TEST_GUEST, CIRROS_COMPATIBLE, ALPINE_COMPATIBLE, FEDORA_COMPATIBLE)
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
    """The Debian packages every flavour is made of, unpacked (and the sudo helper, once compiled), and
    those some flavours take programs and libraries from (package name -> where it is unpacked)."""

    kernel_root: Path
    busybox: bytes
    sudo: Path
    packages: Mapping[str, Path] = field(default_factory=dict)


def elf_dependencies(path: Path) -> tuple[str, list[str]]:
    """A 64-bit little-endian ELF file's program interpreter ("" if none) and the shared libraries it
    needs (DT_NEEDED), read from its program headers and dynamic section."""
    data = path.read_bytes()
    if data[:6] != b"\x7fELF\x02\x01":
        raise RuntimeError(f"{path}: not a 64-bit little-endian ELF file")
    (table,) = struct.unpack_from("<Q", data, 0x20)
    entry_size, count = struct.unpack_from("<HH", data, 0x36)
    loads: list[tuple[int, int, int]] = []
    interpreter, dynamic = "", (0, 0)
    for index in range(count):
        kind, _, offset, address, _, size = struct.unpack_from("<IIQQQQ", data, table + index * entry_size)
        if kind == 1:  # PT_LOAD
            loads.append((address, offset, size))
        elif kind == 2:  # PT_DYNAMIC
            dynamic = (offset, size)
        elif kind == 3:  # PT_INTERP
            interpreter = data[offset : offset + size].rstrip(b"\0").decode()
    entries = []
    for index in range(dynamic[1] // 16):
        tag, value = struct.unpack_from("<qQ", data, dynamic[0] + 16 * index)
        if tag == 0:  # DT_NULL
            break
        entries.append((tag, value))
    strings = [value for tag, value in entries if tag == 5]  # DT_STRTAB, an address
    if not strings:
        return interpreter, []
    base = next(
        offset + strings[0] - address
        for address, offset, size in loads
        if address <= strings[0] < address + size
    )
    needed = []
    for tag, value in entries:
        if tag == 1:  # DT_NEEDED, an offset into the string table
            start = base + value
            needed.append(data[start : data.index(b"\0", start)].decode())
    return interpreter, needed


def _inside(root: Path, path: Path) -> Path:
    """``path`` (under ``root``) with its symbolic links followed as if ``root`` were ``/``."""
    for _ in range(40):
        if not path.is_symlink():
            return path
        target = os.readlink(path)
        path = root / target.lstrip("/") if target.startswith("/") else path.parent / target
    raise RuntimeError(f"{path}: too many levels of symbolic links")


def shared_libraries(programs: list[Path], roots: list[Path]) -> tuple[dict[str, Path], set[str]]:
    """Every shared library ``programs`` need, directly or through other libraries (name -> its file,
    found in the multiarch library folders of the unpacked packages under ``roots``), and the program
    interpreters they name."""
    folders = [(root, root / sub / "x86_64-linux-gnu") for root in roots for sub in ("lib", "usr/lib")]
    found: dict[str, Path] = {}
    interpreters: set[str] = set()
    pending = list(programs)
    while pending:
        interpreter, needed = elf_dependencies(pending.pop())
        if interpreter:
            interpreters.add(interpreter)
            needed = [*needed, Path(interpreter).name]
        for name in needed:
            if name in found:
                continue
            candidates = [
                _inside(root, folder / name)
                for root, folder in folders
                if (folder / name).exists() or (folder / name).is_symlink()
            ]
            files = [candidate for candidate in candidates if candidate.is_file()]
            if not files:
                raise RuntimeError(f"no package among {[root.name for root in roots]} has {name}")
            found[name] = files[0]
            pending.append(files[0])
    return found, interpreters


def _parents(paths: list[str]) -> set[str]:
    return {str(parent) for path in paths for parent in Path(path).parents if str(parent) != "."}


def _debian_files(flavour: Flavour, packages: Unpacked) -> tuple[dict[str, bytes], dict[str, str]]:
    """The flavour's programs from Debian packages with the shared libraries they need (path -> content),
    and the links where the programs look for their interpreter (path -> target)."""
    if not flavour.debian_programs:
        return {}, {}
    sources = {
        path: packages.packages[package] / source
        for path, (package, source) in flavour.debian_programs.items()
    }
    libraries, interpreters = shared_libraries(
        list(sources.values()), [packages.packages[package] for package in flavour.library_packages]
    )
    files = {path: source.read_bytes() for path, source in sources.items()}
    files |= {f"{LIBRARY_DIR}/{name}": source.read_bytes() for name, source in sorted(libraries.items())}
    links = {path.lstrip("/"): f"/{LIBRARY_DIR}/{Path(path).name}" for path in sorted(interpreters)}
    return files, links


def _initramfs(flavour: Flavour, packages: Unpacked) -> bytes:
    modules_dir = next((packages.kernel_root / "lib/modules").iterdir())
    modules = _module_order(modules_dir, MODULES + flavour.modules)
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
    debian_files, interpreter_links = _debian_files(flavour, packages)
    links = {**interpreter_links, **flavour.links}
    # Folders the files of a flavour need beyond those (none for the flavours made of busybox alone).
    placed = [*flavour.files(), *flavour.programs, *debian_files, *links]
    folders += sorted(_parents(placed) - set(folders))
    entries: list[tuple[str, int, bytes]] = [
        (folder, 0o40700 if folder in flavour.homes else 0o40755, b"") for folder in dict.fromkeys(folders)
    ]
    owners = {home: (uid, uid) for home, uid in flavour.homes.items()}
    entries += [
        ("bin/busybox", 0o104755 if flavour.setuid_busybox else 0o100755, packages.busybox),
        ("init", 0o100755, GUEST_INIT.encode()),
        ("etc/inittab", 0o100644, (INITTAB + flavour.inittab).encode()),
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
    entries += [(path, 0o100755, data) for path, data in debian_files.items()]
    entries += [(path, 0o120777, target.encode()) for path, target in links.items()]
    if flavour.boot_records:
        entries.append(("etc/rc.boot-record", 0o100755, BOOT_RECORD_SCRIPT.encode()))
    if flavour.sudo:
        entries.append(("usr/bin/sudo", 0o104750, packages.sudo.read_bytes()))
        owners["usr/bin/sudo"] = (0, flavour.sudo_gid)
    entries += [
        (f"lib/modules/{path.stem}.ko", 0o100644, (modules_dir / path).read_bytes()) for path in modules
    ]
    return gzip.compress(cpio_newc(entries, owners), 9)


def _fat_disk(target: Path, kernel: Path, initrd: Path, syslinux_cfg: Path, hidden_sectors: int = 0) -> None:
    """The FAT file system syslinux boots; ``hidden_sectors``: the sectors before it on its disk (its
    partition's start), which its boot sector adds to every sector it reads."""
    hidden = ["-h", str(hidden_sectors)] if hidden_sectors else []
    _run(["mkfs.vfat", *hidden, "-n", "TESTGUEST", "-C", str(target), str(DISK_SIZE_KIB)])
    for source, name in ((kernel, "vmlinuz"), (initrd, "initrd.gz"), (syslinux_cfg, "syslinux.cfg")):
        _run(["mcopy", "-i", str(target), str(source), f"::{name}"])
    # syslinux writes its boot sector and ldlinux.* through mtools: no mount needed.
    _run(["syslinux", "--install", str(target)])


def partition_entry(bootable: bool, kind: int, start: int, sectors: int) -> bytes:
    """One entry of an MBR partition table (its start and size in 512-byte sectors)."""

    def chs(sector: int) -> bytes:  # the cylinder/head/sector address of 255 heads and 63 sectors a track
        cylinder, rest = divmod(sector, 255 * 63)
        if cylinder > 1023:
            return b"\xfe\xff\xff"
        head, index = divmod(rest, 63)
        return bytes((head, index + 1 | cylinder >> 2 & 0xC0, cylinder & 0xFF))

    end = start + sectors - 1
    return struct.pack("<B3sB3sII", 0x80 if bootable else 0, chs(start), kind, chs(end), start, sectors)


def master_boot_record(boot_code: bytes, entries: list[bytes], signature: int) -> bytes:
    """A disk's first sector: boot code, disk signature, partition table (up to 4 entries)."""
    return (
        boot_code[:440].ljust(440, b"\0")
        + struct.pack("<IH", signature, 0)
        + b"".join(entries).ljust(64, b"\0")
        + b"\x55\xaa"
    )


def _partitioned_disk(target: Path, kernel: Path, initrd: Path, syslinux_cfg: Path, data_kib: int) -> None:
    """Syslinux's MBR, the bootable FAT file system (partition 1) and an ext4 file system of ``data_kib``
    KiB (partition 2), each made as a file of its own, then put in place."""
    fat, data = target.with_name(f"{target.name}.fat"), target.with_name(f"{target.name}.data")
    _fat_disk(fat, kernel, initrd, syslinux_cfg, hidden_sectors=PARTITION_START)
    owner = f"root_owner={DATA_OWNER}:{DATA_OWNER}"
    _run(
        [
            "mkfs.ext4",
            "-q",
            "-F",
            "-m",
            "0",
            "-L",
            DATA_LABEL,
            "-U",
            DATA_UUID,
            "-E",
            owner,
            str(data),
            f"{data_kib}k",
        ]
    )
    fat_sectors, data_sectors = DISK_SIZE_KIB * 2, data_kib * 2
    entries = [
        partition_entry(True, 0x0E, PARTITION_START, fat_sectors),  # FAT16 (LBA)
        partition_entry(False, 0x83, PARTITION_START + fat_sectors, data_sectors),  # Linux
    ]
    signature = int(DATA_UUID[:8], 16)
    with target.open("wb") as disk:
        disk.write(master_boot_record(SYSLINUX_MBR.read_bytes(), entries, signature))
        for image, start in ((fat, PARTITION_START), (data, PARTITION_START + fat_sectors)):
            disk.seek(start * 512)
            with image.open("rb") as source:
                shutil.copyfileobj(source, disk)
        disk.truncate((PARTITION_START + fat_sectors + data_sectors) * 512)
    fat.unlink()
    data.unlink()


def _unpack(package: str, work: Path, more: tuple[str, ...] = ()) -> Unpacked:
    """Fetches and unpacks the kernel ``package``, PACKAGES and the ``more`` packages some flavours use."""
    os.chmod(work, 0o755)  # apt-get download drops to its sandbox user, which must write here
    for deb, name in ((_download(package, work), "kernel"), *((_download(p, work), p) for p in PACKAGES)):
        _run(["dpkg-deb", "-x", str(deb), str(work / name)])
    modules_dir = next((work / "kernel/lib/modules").iterdir())
    # The package leaves modules.dep to depmod at installation time.
    _run(["depmod", "-b", str(work / "kernel"), modules_dir.name])
    sudo = work / "sudo"
    _run(["gcc", "-static", "-Os", "-s", "-Wall", "-Wextra", "-Werror", "-o", str(sudo), str(SUDO_SOURCE)])
    unpacked = {}
    (work / "debian").mkdir()
    for name in more:
        unpacked[name] = work / "debian" / name
        _run(["dpkg-deb", "-x", str(_download(name, work)), str(unpacked[name])])
    busybox = (work / "busybox-static/bin/busybox").read_bytes()
    return Unpacked(work / "kernel", busybox, sudo, unpacked)


def _make(flavour: Flavour, packages: Unpacked, out: Path) -> None:
    out.mkdir()
    shutil.copy(next((packages.kernel_root / "boot").glob("vmlinuz-*")), out / "vmlinuz")
    (out / "initrd.gz").write_bytes(_initramfs(flavour, packages))
    (out / "syslinux.cfg").write_text(SYSLINUX_CFG)
    disk = (out / flavour.disk_name, out / "vmlinuz", out / "initrd.gz", out / "syslinux.cfg")
    if flavour.data_partition_kib:
        _partitioned_disk(*disk, flavour.data_partition_kib)
    else:
        _fat_disk(*disk)
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
            more = tuple(sorted({name for guest in missing for name in guest.flavour.debian_packages()}))
            packages = _unpack(package, Path(work_dir), more)
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
