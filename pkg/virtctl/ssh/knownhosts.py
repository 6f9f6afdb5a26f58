"""The built-in client's host key check against an OpenSSH known_hosts file, with the semantics of Go's
``x/crypto/ssh/knownhosts`` that KubeVirt's virtctl uses: host patterns (``*``, ``?``, ``!negation``,
``[host]:port``), hashed names, ``@revoked`` keys; a host with known keys must present one of them (of
its own type). An unknown host is added after the user answers ``yes``, as KubeVirt's prompt does.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import os
import re
import struct
from collections.abc import Callable
from dataclasses import dataclass

REVOKED, CERT_AUTHORITY = "@revoked", "@cert-authority"


class KnownHostsError(Exception):
    """The host key was refused, or the file could not be used."""


@dataclass(frozen=True)
class Address:
    host: str
    port: str

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"


@dataclass(frozen=True)
class HostKey:
    """A public key as the SSH wire format carries it (``blob``) and the algorithm named inside it."""

    blob: bytes

    @property
    def type(self) -> str:
        (length,) = struct.unpack(">I", self.blob[:4])
        return self.blob[4 : 4 + length].decode()

    def fingerprint(self) -> str:
        digest = base64.b64encode(hashlib.sha256(self.blob).digest()).decode().rstrip("=")
        return f"SHA256:{digest}"

    def line_value(self) -> str:
        return f"{self.type} {base64.b64encode(self.blob).decode()}"


def go_quote(text: str) -> str:
    """Go's ``%q`` for the paths in messages (same as JSON for everything but exotic characters)."""
    return json.dumps(text, ensure_ascii=False)


def split_host_port(address: str) -> Address:
    """Go's ``net.SplitHostPort``; raises ValueError where it fails."""
    if address.startswith("["):
        end = address.find("]")
        if end < 0 or address[end + 1 : end + 2] != ":":
            raise ValueError(f"address {address}: missing port in address")
        return Address(address[1:end], address[end + 2 :])
    host, colon, port = address.rpartition(":")
    if not colon:
        raise ValueError(f"address {address}: missing port in address")
    if ":" in host:
        raise ValueError(f"address {address}: too many colons in address")
    return Address(host, port)


def normalize(address: str) -> str:
    """How a host is written in the file: ``host`` on port 22, else ``[host]:port``."""
    try:
        parsed = split_host_port(address)
    except ValueError:
        parsed = Address(address, "22")
    if parsed.port != "22":
        return f"[{parsed.host}]:{parsed.port}"
    if ":" in parsed.host and not parsed.host.startswith("["):
        return f"[{parsed.host}]"
    return parsed.host


def _wildcard(pattern: str) -> re.Pattern[str]:
    return re.compile("".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern), re.S)


class _Patterns:
    """A comma-separated host list; a matching negated pattern excludes the host whatever else matches."""

    def __init__(self, text: str) -> None:
        self.patterns: list[tuple[bool, re.Pattern[str], str]] = []
        for pattern in filter(None, text.split(",")):
            negate = pattern.startswith("!")
            if negate:
                pattern = pattern[1:]
            if not pattern:
                raise ValueError("knownhosts: negation without following hostname")
            try:
                address = split_host_port(pattern)
            except ValueError:
                if pattern.startswith("["):
                    raise
                address = Address(pattern, "22")
            self.patterns.append((negate, _wildcard(address.host), address.port))

    def match(self, address: Address) -> bool:
        matched = False
        for negate, host, port in self.patterns:
            if host.fullmatch(address.host) and port == address.port:
                if negate:
                    return False
                matched = True
        return matched


class _Hashed:
    """``|1|salt|hash``: HMAC-SHA1 of the normalized host name, keyed with the salt."""

    def __init__(self, text: str) -> None:
        parts = text.split("|")
        if len(parts) != 4 or parts[1] != "1":
            raise ValueError(f"knownhosts: got hash type {parts[1] if len(parts) > 1 else ''}, must be '1'")
        self.salt = base64.b64decode(parts[2], validate=True)
        self.digest = base64.b64decode(parts[3], validate=True)

    def match(self, address: Address) -> bool:
        expected = hmac.new(self.salt, normalize(str(address)).encode(), hashlib.sha1).digest()
        return hmac.compare_digest(expected, self.digest)


def _parse_key(text: str) -> HostKey:
    try:
        blob = base64.b64decode(text, validate=True)
    except binascii.Error as err:
        raise ValueError(f"illegal base64 data: {err}") from None
    key = HostKey(blob)
    try:
        key.type  # noqa: B018 - a blob without a readable algorithm name is no key
    except (struct.error, UnicodeDecodeError):
        raise ValueError("ssh: short read") from None
    return key


class KnownHosts:
    def __init__(self, path: str) -> None:
        self.path = path
        self.revoked: set[bytes] = set()
        self.lines: list[tuple[_Patterns | _Hashed, HostKey]] = []

    @classmethod
    def open(cls, path: str) -> KnownHosts:
        """Creates the file when it is missing, then reads it."""
        if not os.path.exists(path):
            try:
                with open(path, "w"):
                    pass
            except OSError as err:
                raise KnownHostsError(
                    f"failed creating known hosts file {go_quote(path)}: open {path}: {_reason(err)}"
                ) from None
        db = cls(path)
        try:
            with open(path, encoding="utf-8", errors="surrogateescape") as lines:
                for number, line in enumerate(lines, 1):
                    try:
                        db._add(line.strip())
                    except ValueError as err:
                        raise KnownHostsError(f"knownhosts: {path}:{number}: {err}") from None
        except OSError as err:
            raise KnownHostsError(f"open {path}: {_reason(err)}") from None
        return db

    def _add(self, line: str) -> None:
        if not line or line.startswith("#"):
            return
        words = line.split()
        marker = words.pop(0) if words[0] in (REVOKED, CERT_AUTHORITY) else ""
        if len(words) < 2:
            raise ValueError("knownhosts: missing host pattern")
        if len(words) < 3:
            raise ValueError("knownhosts: missing key type pattern")
        key = _parse_key(words[2])
        if marker == REVOKED:
            self.revoked.add(key.blob)
            return
        if marker == CERT_AUTHORITY:
            return  # certificates are not offered to this client
        pattern = words[0]
        self.lines.append((_Hashed(pattern) if pattern.startswith("|") else _Patterns(pattern), key))

    def known_keys(self, hostname: str) -> dict[str, HostKey]:
        """The first key of each type listed for ``host:port``."""
        address = split_host_port(hostname)
        known: dict[str, HostKey] = {}
        for matcher, key in self.lines:
            if matcher.match(address):
                known.setdefault(key.type, key)
        return known

    def verify(self, hostname: str, remote: str, key: HostKey, ask: Callable[[str], str]) -> None:
        """Accepts a listed key; for an unlisted host asks whether to trust and record this one."""
        if key.blob in self.revoked:
            raise KnownHostsError("knownhosts: key is revoked")
        known = self.known_keys(hostname)
        if known:
            listed = known.get(key.type)
            if listed is None or listed.blob != key.blob:
                raise KnownHostsError("knownhosts: key mismatch")
            return
        if not confirm(hostname, remote, key, ask):
            raise KnownHostsError("Host key verification failed.")
        self.append(hostname, key)

    def append(self, hostname: str, key: HostKey) -> None:
        try:
            descriptor = os.open(self.path, os.O_APPEND | os.O_WRONLY, 0o600)
        except OSError as err:
            raise KnownHostsError(f"open {self.path}: {_reason(err)}") from None
        with os.fdopen(descriptor, "w") as file:
            file.write(f"{normalize(hostname)} {key.line_value()}\n")


def key_label(key: HostKey) -> str:
    """The algorithm family as OpenSSH names it in its prompt (ED25519, ECDSA, RSA...)."""
    name = key.type
    for prefix, label in (("ssh-ed25519", "ED25519"), ("ecdsa-", "ECDSA"), ("ssh-rsa", "RSA")):
        if name.startswith(prefix):
            return label
    return name.upper()


def confirm(hostname: str, remote: str, key: HostKey, ask: Callable[[str], str]) -> bool:
    prompt = (
        f"The authenticity of host '{hostname} ({remote})' can't be established.\n"
        f"{key_label(key)} key fingerprint is {key.fingerprint()}.\n"
        "Are you sure you want to continue connecting (yes/no)? "
    )
    answer = ask(prompt).strip()
    while answer not in ("yes", "no"):
        answer = ask("Please reply with either yes or no.\n" + prompt).strip()
    return answer == "yes"


def _reason(err: OSError) -> str:
    return (err.strerror or str(err)).lower()
