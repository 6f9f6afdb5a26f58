"""The test guests' shared recipe: each flavour is keyed apart in the cache, carries the accounts and
greeting of the distribution it stands in for, and its initramfs holds them with the right owners."""

from __future__ import annotations

import dataclasses
import gzip
import shutil
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "hack" / "cluster"))

from localcluster import images, testguest  # noqa: E402


def read_cpio(archive: bytes) -> dict[str, tuple[int, int, int, bytes]]:
    """name -> (mode, uid, gid, data) of a newc archive."""
    entries: dict[str, tuple[int, int, int, bytes]] = {}
    offset = 0
    while True:
        fields = [int(archive[offset + 6 + 8 * i : offset + 14 + 8 * i], 16) for i in range(13)]
        name_size, size = fields[11], fields[6]
        name = archive[offset + 110 : offset + 110 + name_size - 1].decode()
        offset += 110 + name_size
        offset += -offset % 4
        data = archive[offset : offset + size]
        offset += size + (-(offset + size) % 4)
        if name == "TRAILER!!!":
            return entries
        entries[name] = (fields[1], fields[2], fields[3], data)


def test_each_flavour_has_its_own_cache_key_and_image() -> None:
    digests = {testguest.recipe_digest(flavour) for flavour in testguest.FLAVOURS}
    assert len(digests) == len(testguest.FLAVOURS)
    assert images.COMPATIBLE_GUEST_IMAGES == (
        "test-guest-cirros-compatible",
        "test-guest-alpine-compatible",
        "test-guest-fedora-compatible",
    )
    assert set(images.COMPATIBLE_GUEST_IMAGES) <= set(images.TEST_GUEST_IMAGES)
    assert testguest.CIRROS_COMPATIBLE.disk_name == "test-guest-cirros-compatible.img"
    # KubeVirt's suite pulls its Fedora guest under this name; the Fedora-compatible guest answers it.
    assert images.SUITE_GUEST_IMAGES["fedora-with-test-tooling-container-disk"] == (
        testguest.FEDORA_COMPATIBLE.name
    )
    assert set(images.SUITE_GUEST_IMAGES.values()) == set(images.COMPATIBLE_GUEST_IMAGES)


# Each field only some flavours set, with a value: set on the plain guest, each must change its cache key.
FLAVOUR_EXTRAS: dict[str, Any] = {
    "sudo_gid": 10,
    "more_files": {"etc/os-release": "ID=test\n"},
    "debian_programs": {"usr/bin/tool": ("tool-package", "usr/bin/tool")},
    "library_packages": ("libc6",),
    "links": {"var/run": "../run"},
    "modules": ("virtio_console",),
    "inittab": "::respawn:/bin/true\n",
    "data_partition_kib": 1024,
}


def test_fields_a_flavour_leaves_unset_do_not_change_its_cache_key() -> None:
    plain = testguest.recipe_digest(testguest.TEST_GUEST)
    assert testguest.recipe_digest(dataclasses.replace(testguest.TEST_GUEST)) == plain
    changed = {
        name: testguest.recipe_digest(dataclasses.replace(testguest.TEST_GUEST, **{name: value}))
        for name, value in FLAVOUR_EXTRAS.items()
    }
    assert plain not in changed.values()
    assert len(set(changed.values())) == len(FLAVOUR_EXTRAS)
    # The flavours made of busybox alone set none of them: their keys are what they were before the fields.
    defaults = {
        f.name: f.default if f.default_factory is dataclasses.MISSING else f.default_factory()
        for f in dataclasses.fields(testguest.Flavour)
        if f.name in FLAVOUR_EXTRAS
    }
    assert set(defaults) == set(FLAVOUR_EXTRAS)
    for flavour in (testguest.TEST_GUEST, testguest.CIRROS_COMPATIBLE, testguest.ALPINE_COMPATIBLE):
        assert {name: getattr(flavour, name) for name in FLAVOUR_EXTRAS} == defaults
        assert flavour.debian_packages() == ()


def test_the_cirros_compatible_guest_greets_and_logs_in_like_cirros() -> None:
    files = testguest.CIRROS_COMPATIBLE.files()
    assert files["etc/issue"] == (
        "login as 'cirros' user. default password: 'gocubsgo'. use 'sudo' for root.\n"
    )
    assert "cirros:x:1000:1000:cirros:/home/cirros:/bin/sh" in files["etc/passwd"]
    assert "sudo:x:27:cirros" in files["etc/group"]
    assert files["etc/profile"].startswith("export PS1='\\$ '\n")
    # CirrOS's netcat options, reached from login shells ahead of busybox's own applet.
    assert 'nc() { /usr/bin/nc "$@"; }' in files["etc/profile"]
    assert testguest.CIRROS_COMPATIBLE.programs["usr/bin/nc"].startswith("#!/bin/sh\n")
    shadow = dict(line.split(":", 2)[:2] for line in files["etc/shadow"].splitlines())
    assert shadow["root"] == "*"  # locked, as on CirrOS
    salt = shadow["cirros"].split("$")[2]
    # busybox's own crypt, as the guest's login checks it (the host's openssl gives the same SHA-512 hash).
    hashed = subprocess.run(
        ["openssl", "passwd", "-6", "-salt", salt, testguest.CIRROS_PASSWORD],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert hashed == shadow["cirros"]


def test_the_alpine_compatible_guest_logs_root_in_without_a_password() -> None:
    files = testguest.ALPINE_COMPATIBLE.files()
    assert files["etc/hostname"] == "localhost\n"
    assert files["etc/passwd"].startswith("root::0:0:")
    assert "etc/shadow" not in files


def test_the_initramfs_holds_the_accounts_with_their_owners(tmp_path: Path) -> None:
    sudo = tmp_path / "sudo"
    sudo.write_bytes(b"helper")
    packages = testguest.Unpacked(kernel_root=tmp_path, busybox=b"busybox", sudo=sudo)
    (tmp_path / "lib/modules/6.1.0-test").mkdir(parents=True)
    dep = "".join(f"kernel/{name}.ko:\n" for name in testguest.MODULES)
    (tmp_path / "lib/modules/6.1.0-test/modules.dep").write_text(dep)
    for name in testguest.MODULES:
        (tmp_path / f"lib/modules/6.1.0-test/kernel/{name}.ko").parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / f"lib/modules/6.1.0-test/kernel/{name}.ko").write_bytes(name.encode())

    entries = read_cpio(gzip.decompress(testguest._initramfs(testguest.CIRROS_COMPATIBLE, packages)))
    assert entries["usr/bin/sudo"][:3] == (0o104750, 0, testguest.SUDO_GID)  # setuid root, group sudo
    assert entries["home/cirros"][:3] == (0o40700, 1000, 1000)
    assert entries["etc/shadow"][:3] == (0o100600, 0, 0)
    assert entries["bin/busybox"][0] == 0o104755
    assert entries["etc/inittab"][3].decode().startswith("::sysinit:/etc/rc.boot\n")

    plain = read_cpio(gzip.decompress(testguest._initramfs(testguest.TEST_GUEST, packages)))
    assert "usr/bin/sudo" not in plain
    assert plain["bin/busybox"][0] == 0o100755
    assert plain["etc/passwd"][3] == b"root::0:0:root:/root:/bin/sh\n"


@pytest.mark.parametrize(
    ("meta_data", "hostname"),
    [
        ('{"instance-id": "1", "local-hostname": "vm-a"}', "vm-a"),  # NoCloud, as KubeVirt writes it
        ("instance-id: 1\nlocal-hostname: vm-b\n", "vm-b"),  # NoCloud as YAML
    ],
)
def test_the_boot_script_reads_the_hostname_from_nocloud_meta_data(
    tmp_path: Path, meta_data: str, hostname: str
) -> None:
    (line,) = [
        line for line in testguest.BOOT_SCRIPT.splitlines() if "local-hostname" in line and "sed" in line
    ]
    command = (
        line.strip().removeprefix("name=$(").removesuffix(")").replace("/mnt/cidata/meta-data", "meta-data")
    )
    (tmp_path / "meta-data").write_text(meta_data)
    found = subprocess.run(["sh", "-c", command], cwd=tmp_path, capture_output=True, text=True, check=True)
    assert found.stdout.strip() == hostname


def test_the_fedora_compatible_guest_is_fedora_to_its_agent_and_logs_in_like_fedora() -> None:
    flavour = testguest.FEDORA_COMPATIBLE
    files = flavour.files()
    os_release = dict(line.split("=", 1) for line in files["etc/os-release"].splitlines())
    assert os_release["ID"] == "fedora"
    assert os_release["NAME"] == '"Fedora Linux"'
    assert os_release["VERSION_ID"] == "39"
    assert os_release["PRETTY_NAME"] == '"Fedora Linux 39 (Cloud Edition)"'
    assert files["etc/hostname"] == "fedora\n"  # LoginToFedora accepts "fedora login: " before DHCP names it
    assert "fedora:x:1000:1000:fedora Cloud User:/home/fedora:/bin/sh" in files["etc/passwd"]
    assert "wheel:x:10:fedora" in files["etc/group"].splitlines()
    assert (flavour.sudo, flavour.sudo_gid) == (True, 10)
    assert flavour.homes["home/fedora"] == 1000
    shadow = dict(line.split(":", 2)[:2] for line in files["etc/shadow"].splitlines())
    salt = shadow["fedora"].split("$")[2]
    hashed = subprocess.run(
        ["openssl", "passwd", "-6", "-salt", salt, testguest.FEDORA_PASSWORD],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert hashed == shadow["fedora"]
    assert shadow["root"].startswith("!")  # locked: "sudo su" is the way to root
    # The agent runs from init, stopped and started with systemctl as KubeVirt's specs do on Fedora.
    assert "::respawn:/usr/libexec/testguest-service qemu-guest-agent\n" in flavour.inittab
    assert "qemu-guest-agent) program=qemu-ga ;;" in flavour.programs["usr/bin/systemctl"]
    assert "BLACKLIST_RPC=\n" in files["etc/sysconfig/qemu-ga"]
    assert flavour.debian_programs["usr/bin/qemu-ga"] == ("qemu-guest-agent", "usr/sbin/qemu-ga")


@pytest.mark.parametrize(
    ("home", "directory", "shown"),
    [
        ("/home/fedora", "/home/fedora", "~"),  # [fedora@host ~]$
        ("/root", "/home/fedora", "fedora"),  # [root@host fedora]# after "sudo su"
        ("/home/fedora", "/", "/"),
    ],
)
def test_the_fedora_prompt_shows_the_folder_as_bash_does(
    tmp_path: Path, home: str, directory: str, shown: str
) -> None:
    profile = testguest.FEDORA_COMPATIBLE.files()["etc/profile"]
    (ps1,) = [line for line in profile.splitlines() if line.startswith("export PS1=")]
    assert ps1.startswith("export PS1='[\\u@\\h $(")
    assert ps1.endswith(")]\\$ '")
    folder = ps1.removeprefix("export PS1='[\\u@\\h $(").removesuffix(")]\\$ '")
    # The shell's own PWD is where it runs: the guest's is set in the script.
    script = f"HOME={home}; PWD={directory}; {folder}"
    found = subprocess.run(["sh", "-c", script], cwd=tmp_path, capture_output=True, text=True, check=True)
    assert found.stdout.strip() == shown


def test_the_shutdown_the_agent_runs_goes_through_init(tmp_path: Path) -> None:
    """qemu-ga runs "shutdown -h -P|-H|-r +0 MESSAGE": the last of those options picks init's action."""
    for name in ("poweroff", "halt", "reboot"):
        (tmp_path / name).write_text(f"#!/bin/sh\necho {name}\n")
        (tmp_path / name).chmod(0o755)
    script = tmp_path / "shutdown"
    script.write_text(testguest.FEDORA_COMPATIBLE.programs["sbin/shutdown"])
    env = {"PATH": f"{tmp_path}:/usr/bin:/bin"}
    for flag, action in (("-P", "poweroff"), ("-H", "halt"), ("-r", "reboot")):
        argv = ["sh", str(script), "-h", flag, "+0", "hypervisor initiated shutdown"]
        assert subprocess.run(argv, env=env, capture_output=True, text=True).stdout == f"{action}\n"


def _compile(tmp_path: Path, out: Path, source: str, *options: str) -> None:
    (tmp_path / "source.c").write_text(source)
    out.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["gcc", "-nostdlib", "-o", str(out), str(tmp_path / "source.c"), *options], check=True)


@pytest.fixture
def debian_packages(tmp_path: Path) -> dict[str, Path]:
    """Stand-in unpacked packages: "tool" has usr/bin/tool (needing libfoo.so.1, interpreter
    /lib64/ld-test.so.1); "libs" has libfoo (needing libbar.so.2), libbar and the interpreter, reached
    through relative and absolute links as in Debian's packages."""
    if shutil.which("gcc") is None:
        pytest.skip("no gcc")
    libs, tool = tmp_path / "libs", tmp_path / "tool"
    usr_lib, lib = libs / "usr/lib/x86_64-linux-gnu", libs / "lib/x86_64-linux-gnu"
    shared = ("-shared", "-fPIC")
    _compile(
        tmp_path, lib / "libbar.so.2.0", "int bar(void) { return 2; }\n", *shared, "-Wl,-soname,libbar.so.2"
    )
    (lib / "libbar.so.2").symlink_to("/lib/x86_64-linux-gnu/libbar.so.2.0")
    _compile(
        tmp_path,
        usr_lib / "libfoo.so.1.0",
        "int bar(void);\nint foo(void) { return bar(); }\n",
        *shared,
        "-Wl,-soname,libfoo.so.1",
        f"-L{lib}",
        "-l:libbar.so.2.0",
    )
    (usr_lib / "libfoo.so.1").symlink_to("libfoo.so.1.0")
    _compile(tmp_path, lib / "ld-test.so.1", "int loader;\n", *shared, "-Wl,-soname,ld-test.so.1")
    _compile(
        tmp_path,
        tool / "usr/bin/tool",
        "int foo(void);\nvoid _start(void) { foo(); }\n",
        f"-L{usr_lib}",
        "-l:libfoo.so.1.0",
        "-Wl,--allow-shlib-undefined",  # libfoo's libbar is linked absolutely, within the package only
        "-Wl,--dynamic-linker=/lib64/ld-test.so.1",
    )
    return {"libs": libs, "tool": tool}


def test_a_program_s_interpreter_and_libraries_are_read_from_its_elf_headers(
    debian_packages: dict[str, Path],
) -> None:
    assert testguest.elf_dependencies(debian_packages["tool"] / "usr/bin/tool") == (
        "/lib64/ld-test.so.1",
        ["libfoo.so.1"],
    )
    libfoo = debian_packages["libs"] / "usr/lib/x86_64-linux-gnu/libfoo.so.1.0"
    assert testguest.elf_dependencies(libfoo) == ("", ["libbar.so.2"])
    libraries, interpreters = testguest.shared_libraries(
        [debian_packages["tool"] / "usr/bin/tool"], [debian_packages["libs"]]
    )
    assert {name: path.name for name, path in libraries.items()} == {
        "libfoo.so.1": "libfoo.so.1.0",
        "libbar.so.2": "libbar.so.2.0",  # behind a link absolute within the package
        "ld-test.so.1": "ld-test.so.1",
    }
    assert interpreters == {"/lib64/ld-test.so.1"}
    with pytest.raises(RuntimeError, match=r"libfoo\.so\.1"):
        testguest.shared_libraries([debian_packages["tool"] / "usr/bin/tool"], [debian_packages["tool"]])


def test_the_fedora_initramfs_holds_its_debian_programs_libraries_and_services(
    tmp_path: Path, debian_packages: dict[str, Path]
) -> None:
    flavour = dataclasses.replace(
        testguest.FEDORA_COMPATIBLE,
        debian_programs={"usr/sbin/tool": ("tool", "usr/bin/tool")},
        library_packages=("libs",),
    )
    kernel = tmp_path / "kernel"
    modules = (*testguest.MODULES, *flavour.modules)
    (kernel / "lib/modules/6.1.0-test/kernel").mkdir(parents=True)
    (kernel / "lib/modules/6.1.0-test/modules.dep").write_text("".join(f"kernel/{m}.ko:\n" for m in modules))
    for name in modules:
        (kernel / f"lib/modules/6.1.0-test/kernel/{name}.ko").write_bytes(name.encode())
    sudo = tmp_path / "sudo"
    sudo.write_bytes(b"helper")
    packages = testguest.Unpacked(kernel, b"busybox", sudo, debian_packages)

    entries = read_cpio(gzip.decompress(testguest._initramfs(flavour, packages)))
    names = list(entries)
    tool = debian_packages["tool"] / "usr/bin/tool"
    assert entries["usr/sbin/tool"] == (0o100755, 0, 0, tool.read_bytes())
    libfoo = debian_packages["libs"] / "usr/lib/x86_64-linux-gnu/libfoo.so.1.0"
    assert entries["lib/x86_64-linux-gnu/libfoo.so.1"][3] == libfoo.read_bytes()
    assert "lib/x86_64-linux-gnu/libbar.so.2" in entries
    # The program finds its interpreter where its header says, linked to the library folder.
    assert entries["lib64/ld-test.so.1"][:1] + entries["lib64/ld-test.so.1"][3:] == (
        0o120777,
        b"/lib/x86_64-linux-gnu/ld-test.so.1",
    )
    assert entries["var/run"][3] == b"../run"
    # Every folder comes before what is in it (the kernel unpacks in order and makes no parents).
    for name in names:
        parent = str(Path(name).parent)
        if parent != ".":
            assert entries[parent][0] == 0o40755 or parent in flavour.homes, name
            assert names.index(parent) < names.index(name), name
    assert entries["usr/bin/sudo"][:3] == (0o104750, 0, 10)  # for the wheel group
    assert entries["home/fedora"][:3] == (0o40700, 1000, 1000)
    inittab = entries["etc/inittab"][3].decode()
    assert inittab == testguest.INITTAB + flavour.inittab
    assert entries["etc/modules"][3].decode().split()[-3:] == ["virtio_console", "crc32c_generic", "ext4"]
    assert entries["etc/rc.fedora"][0] == 0o100755
    assert entries["etc/os-release"][0] == 0o100644


def test_a_partition_entry_and_boot_record_are_as_partitioning_tools_write_them() -> None:
    entry = testguest.partition_entry(True, 0x0E, 2048, 65536)
    # Bootable, CHS 0/32/33 (1 MiB with 255 heads and 63 sectors), FAT16 (LBA), LBA start and size.
    assert entry == bytes((0x80, 32, 33, 0, 0x0E)) + entry[5:8] + struct.pack("<II", 2048, 65536)
    far = testguest.partition_entry(False, 0x83, 255 * 63 * 1024, 2048)
    assert far[1:4] == b"\xfe\xff\xff"  # beyond what CHS addresses
    record = testguest.master_boot_record(b"\xeb" * 500, [entry, far], 0x12345678)
    assert len(record) == 512
    assert record[:440] == b"\xeb" * 440
    assert record[440:446] == struct.pack("<IH", 0x12345678, 0)
    assert record[446:478] == entry + far
    assert record[478:510] == bytes(32)
    assert record[510:] == b"\x55\xaa"


TOOLS = ("mkfs.vfat", "mcopy", "syslinux", "mkfs.ext4")


@pytest.mark.skipif(
    any(shutil.which(tool) is None for tool in TOOLS) or not testguest.SYSLINUX_MBR.exists(),
    reason="needs dosfstools, mtools, syslinux and e2fsprogs",
)
def test_the_partitioned_disk_boots_its_fat_partition_and_holds_the_data_file_system(tmp_path: Path) -> None:
    for name in ("vmlinuz", "initrd.gz"):
        (tmp_path / name).write_bytes(name.encode() * 100)
    (tmp_path / "syslinux.cfg").write_text(testguest.SYSLINUX_CFG)
    disk = tmp_path / "disk.img"
    inputs = (tmp_path / "vmlinuz", tmp_path / "initrd.gz", tmp_path / "syslinux.cfg")
    testguest._partitioned_disk(disk, *inputs, 4096)

    data = disk.read_bytes()
    fat_start, fat_sectors = testguest.PARTITION_START, testguest.DISK_SIZE_KIB * 2
    assert len(data) == (fat_start + fat_sectors + 4096 * 2) * 512
    assert data[:440] == testguest.SYSLINUX_MBR.read_bytes()[:440]
    assert data[510:512] == b"\x55\xaa"
    first, second = (struct.unpack_from("<B3sB3sII", data, 446 + 16 * i) for i in range(2))
    assert (first[0], first[2], first[4], first[5]) == (0x80, 0x0E, fat_start, fat_sectors)
    assert (second[0], second[2], second[4], second[5]) == (0, 0x83, fat_start + fat_sectors, 4096 * 2)
    boot = fat_start * 512
    assert data[boot + 43 : boot + 54] == b"TESTGUEST  "  # the label the boot scripts look for
    assert struct.unpack_from("<I", data, boot + 28)[0] == fat_start  # hidden sectors: where it starts
    assert data[boot + 510 : boot + 512] == b"\x55\xaa"  # syslinux's boot sector
    listing = subprocess.run(
        ["mdir", "-a", "-b", "-i", f"{disk}@@{boot}", "::"], capture_output=True, text=True, check=True
    ).stdout.split()
    assert {"::/vmlinuz", "::/initrd.gz", "::/syslinux.cfg", "::/ldlinux.sys"} <= set(listing)
    superblock = (fat_start + fat_sectors) * 512 + 1024
    assert data[superblock + 56 : superblock + 58] == b"\x53\xef"  # ext2/3/4's magic
    assert data[superblock + 120 : superblock + 136].rstrip(b"\0").decode() == testguest.DATA_LABEL
