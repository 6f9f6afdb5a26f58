"""The known_hosts file as Go's knownhosts reads it: patterns, negation, ports, hashed names, revoked
keys, and a host whose listed keys are all of another type."""

from __future__ import annotations

import base64
import hashlib
import hmac
import struct
from pathlib import Path

import pytest

from kubevirt.virtctl.ssh.knownhosts import HostKey, KnownHosts, KnownHostsError, normalize


def key(algorithm: str, body: bytes) -> HostKey:
    name = algorithm.encode()
    return HostKey(struct.pack(">I", len(name)) + name + body)


ED_A, ED_B = key("ssh-ed25519", b"a" * 32), key("ssh-ed25519", b"b" * 32)
RSA = key("ssh-rsa", b"r" * 64)


def entry(hosts: str, host_key: HostKey) -> str:
    return f"{hosts} {host_key.line_value()}\n"


def hashed(host: str, salt: bytes = b"0123456789abcdefghij") -> str:
    digest = hmac.new(salt, host.encode(), hashlib.sha1).digest()
    return f"|1|{base64.b64encode(salt).decode()}|{base64.b64encode(digest).decode()}"


def never(prompt: str) -> str:
    raise AssertionError(f"unexpected question: {prompt}")


def write(tmp_path: Path, *lines: str) -> KnownHosts:
    path = tmp_path / "known_hosts"
    path.write_text("".join(lines))
    return KnownHosts.open(str(path))


def test_names_are_normalized_as_go_writes_them() -> None:
    assert normalize("vmi/a.ns:22") == "vmi/a.ns"
    assert normalize("vmi/a.ns:2222") == "[vmi/a.ns]:2222"
    assert normalize("vmi/a.ns") == "vmi/a.ns"


def test_patterns_ports_negation_and_hashes(tmp_path: Path) -> None:
    db = write(
        tmp_path,
        "# comment\n",
        "\n",
        entry("vmi/*.prod,!vmi/secret.prod", ED_A),
        entry("[vm/x.ns]:2222", ED_B),
        entry(hashed("vmi/hidden.ns"), RSA),
        entry("vmi/?.short", ED_B),
    )
    assert db.known_keys("vmi/web.prod:22") == {"ssh-ed25519": ED_A}
    assert db.known_keys("vmi/secret.prod:22") == {}
    assert db.known_keys("vm/x.ns:2222") == {"ssh-ed25519": ED_B}
    assert db.known_keys("vm/x.ns:22") == {}
    assert db.known_keys("vmi/hidden.ns:22") == {"ssh-rsa": RSA}
    assert db.known_keys("vmi/q.short:22") == {"ssh-ed25519": ED_B}
    assert db.known_keys("vmi/qq.short:22") == {}


def test_a_listed_host_must_show_a_listed_key_of_its_type(tmp_path: Path) -> None:
    db = write(tmp_path, entry("vmi/a.ns", RSA))
    for offered in (ED_A, key("ssh-rsa", b"x" * 64)):
        with pytest.raises(KnownHostsError, match=r"^knownhosts: key mismatch$"):
            db.verify("vmi/a.ns:22", "1.2.3.4:6443", offered, never)
    db.verify("vmi/a.ns:22", "1.2.3.4:6443", RSA, never)


def test_a_revoked_key_is_refused_everywhere(tmp_path: Path) -> None:
    db = write(tmp_path, f"@revoked * {ED_A.line_value()}\n", entry("vmi/a.ns", ED_A))
    with pytest.raises(KnownHostsError, match=r"^knownhosts: key is revoked$"):
        db.verify("vmi/a.ns:22", "1.2.3.4:6443", ED_A, never)


def test_a_broken_line_names_the_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "known_hosts"
    path.write_text(entry("vmi/a.ns", ED_A) + "vmi/b.ns\n")
    with pytest.raises(KnownHostsError) as broken:
        KnownHosts.open(str(path))
    assert str(broken.value) == f"knownhosts: {path}:2: knownhosts: missing host pattern"
