"""The test guests' shared recipe: each flavour is keyed apart in the cache, carries the accounts and
greeting of the distribution it stands in for, and its initramfs holds them with the right owners."""

from __future__ import annotations

import gzip
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "hack" / "cluster"))

from localcluster import images, testguest  # noqa: E402


def read_cpio(archive: bytes) -> dict[str, tuple[int, int, int, bytes]]:
    """name -> (mode, uid, gid, data) of a newc archive."""
    entries = {}
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
    assert images.COMPATIBLE_GUEST_IMAGES == ("test-guest-cirros-compatible", "test-guest-alpine-compatible")
    assert set(images.COMPATIBLE_GUEST_IMAGES) <= set(images.TEST_GUEST_IMAGES)
    assert testguest.CIRROS_COMPATIBLE.disk_name == "test-guest-cirros-compatible.img"


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
