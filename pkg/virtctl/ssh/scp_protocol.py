"""The classic SCP protocol over an SSH session, as the Go library behind KubeVirt's built-in ``virtctl
scp`` speaks it: the guest's own ``scp`` runs in sink (``scp -q -t [-r] 'path'``) or source
(``scp -q -f [-r] [-p] 'path'``) mode, and files travel as ``C``/``D``/``E``/``T`` records, each answered
with a status byte. No SFTP server is needed on the guest, only an ``scp`` binary in its ``PATH``.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
from dataclasses import dataclass
from typing import Any

OK, ERROR, FATAL = b"\x00", b"\x01", b"\x02"
DEFAULT_FILE_MODE, DEFAULT_DIR_MODE = 0o644, 0o755
START_TIMEOUT = 10.0
CHUNK = 32 * 1024
_RECORD = re.compile(rb"(?P<kind>[CD])(?P<mode>[0-7]{4}) (?P<size>\d+) (?P<name>[^\n]+)")
_TIMES = re.compile(rb"T(?P<mtime>\d+) \d+ (?P<atime>\d+) \d+")


class ScpError(Exception):
    """A failed transfer; the command prints it after ``scp: ``."""


def quote(path: str) -> str:
    """Single quotes for the remote shell (the Go library quotes the same way, without escaping)."""
    return "'" + path.replace("'", "'\\''") + "'"


def remote_command(mode: str, path: str, *, recursive: bool = False, preserve: bool = False) -> str:
    flags = ["-q", f"-{mode}"] + (["-r"] if recursive else []) + (["-p"] if preserve else [])
    return f"scp {' '.join(flags)} {quote(path)}"


@dataclass
class Times:
    mtime: int
    atime: int


class Session:
    """One remote ``scp`` process: its stdin and stdout carry the protocol, its stderr is dropped."""

    def __init__(self, transport: Any, command: str) -> None:
        self.channel = transport.open_session()
        self.channel.exec_command(command)
        self.reader = self.channel.makefile("rb")

    def close(self) -> None:
        self.channel.close()

    def send(self, data: bytes) -> None:
        self.channel.sendall(data)

    def _ended(self, fallback: str) -> ScpError:
        """The remote scp is gone: its failing exit status says more than the end of its output."""
        if self.channel.status_event.wait(5) and self.channel.exit_status not in (0, -1):
            return ScpError(
                f"unexpected remote scp server failure: Process exited with status {self.channel.exit_status}"
            )
        return ScpError(fallback)

    def read_status(self) -> None:
        status = self.reader.read(1)
        if not status:
            raise self._ended("error reading server response status: EOF")
        if status in (ERROR, FATAL):
            raise ScpError(_message(self.reader.readline()))
        if status != OK:
            raise ScpError(f"unknown server response status {status.decode(errors='replace')}")

    def read_record(self) -> bytes | None:
        """The next record without its newline; None when the source finished cleanly."""
        first: bytes = self.reader.read(1)
        if not first:
            return None
        if first in (ERROR, FATAL):
            raise ScpError(_message(self.reader.readline()))
        line: bytes = first + self.reader.readline()
        if not line.endswith(b"\n"):
            raise self._ended("error receiving signal from remote scp server: EOF")
        return line[:-1]

    def refuse(self, message: str) -> ScpError:
        """Tells the remote why this side stops, and gives the error to raise."""
        with contextlib.suppress(OSError, EOFError):
            self.send(ERROR + f"scp: {message}\n".encode())
        return ScpError(message)

    def finish(self) -> None:
        """Ends the remote's input; it exits once it has read everything."""
        with contextlib.suppress(OSError, EOFError):
            self.channel.shutdown_write()


def _message(line: bytes) -> str:
    text = line.decode(errors="replace").rstrip("\n")
    return text.removeprefix("scp:").strip(" ")


# -- to the guest -------------------------------------------------------------------------------------


def _send_times(session: Session, info: os.stat_result) -> None:
    session.send(f"T{int(info.st_mtime)} 0 {int(info.st_atime)} 0\n".encode())
    session.read_status()


def _send_file(session: Session, path: str, name: str, info: os.stat_result, preserve: bool) -> None:
    mode = stat.S_IMODE(info.st_mode) & 0o777 if preserve else DEFAULT_FILE_MODE
    if preserve:
        _send_times(session, info)
    session.send(f"C{mode:04o} {info.st_size} {name}\n".encode())
    session.read_status()
    with open(path, "rb") as file:
        sent = 0
        while sent < info.st_size and (chunk := file.read(min(CHUNK, info.st_size - sent))):
            session.send(chunk)
            sent += len(chunk)
    if sent != info.st_size:
        raise ScpError(f"error sending file {name!r}: the file shrank while it was sent")
    session.send(OK)
    session.read_status()


def _send_directory(session: Session, path: str, name: str, preserve: bool) -> None:
    info = os.stat(path)
    mode = stat.S_IMODE(info.st_mode) & 0o777 if preserve else DEFAULT_DIR_MODE
    if preserve:
        _send_times(session, info)
    session.send(f"D{mode:04o} 0 {name}\n".encode())
    session.read_status()
    files, directories = [], []
    for entry in sorted(os.listdir(path)):
        full = os.path.join(path, entry)
        entry_info = os.stat(full)
        if stat.S_ISDIR(entry_info.st_mode):
            directories.append(entry)
        elif stat.S_ISREG(entry_info.st_mode):
            files.append((entry, entry_info))
    for entry, entry_info in files:  # the files first, then the subdirectories, as the Go library does
        _send_file(session, os.path.join(path, entry), entry, entry_info, preserve)
    for entry in directories:
        _send_directory(session, os.path.join(path, entry), entry, preserve)
    session.send(b"E\n")
    session.read_status()


def _wait_ready(session: Session) -> None:
    """The sink's first status byte says it is ready."""
    session.channel.settimeout(START_TIMEOUT)
    try:
        session.read_status()
    except TimeoutError:
        raise ScpError("timeout starting remote scp server") from None
    session.channel.settimeout(None)


def _base_name(path: str) -> str:
    """Go's ``os.File.Stat().Name()``: the last element of the path as it was opened."""
    trimmed = path.rstrip("/")
    return os.path.basename(trimmed) if trimmed else "/"


def copy_file_to_remote(transport: Any, local: str, remote: str, *, preserve: bool) -> None:
    info = os.stat(local)
    session = Session(transport, remote_command("t", remote))
    try:
        _wait_ready(session)
        _send_file(session, local, _base_name(local), info, preserve)
        session.send(b"E\n")
        session.read_status()
        session.finish()
    finally:
        session.close()


def copy_directory_to_remote(transport: Any, local: str, remote: str, *, preserve: bool) -> None:
    session = Session(transport, remote_command("t", remote, recursive=True))
    try:
        _wait_ready(session)
        _send_directory(session, local, _base_name(local), preserve)
        session.finish()
    finally:
        session.close()


# -- from the guest -----------------------------------------------------------------------------------


def _set_times(session: Session, path: str, times: Times | None) -> None:
    if times is None:
        return
    try:
        os.utime(path, (times.atime, times.mtime))
    except OSError as err:
        raise session.refuse(
            f"error setting mtime and atime {path} {_os_reason('chtimes', path, err)}"
        ) from None


def _os_reason(operation: str, path: str, err: OSError) -> str:
    return f"{operation} {path}: {(err.strerror or str(err)).lower()}"


def _receive_file(session: Session, path: str, mode: int, size: int, times: Times | None) -> None:
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    except OSError as err:
        raise session.refuse(_os_reason("open", path, err)) from None
    with os.fdopen(descriptor, "wb") as file:
        session.send(OK)
        remaining = size
        while remaining:
            chunk = session.reader.read(min(CHUNK, remaining))
            if not chunk:
                raise ScpError(f"error reading file from remote: EOF ({size - remaining} of {size} bytes)")
            file.write(chunk)
            remaining -= len(chunk)
    if session.reader.read(1) != OK:
        raise ScpError("protocol error: expecting delimiter \\x00 after the file's content")
    _set_times(session, path, times)


def _receive(session: Session, local: str, recursive: bool) -> None:
    """Writes what the source sends: one file to ``local``, or with ``recursive`` the remote directory's
    content into the directory ``local``."""
    path = [local]
    first = True
    times: Times | None = None
    session.send(OK)
    while True:
        record = session.read_record()
        if record is None:
            if recursive and len(path) == 1 and not first:
                return  # a single file sent in recursive mode: the source just exits
            raise session._ended("error receiving signal from remote scp server: EOF")
        if match := _TIMES.fullmatch(record):
            times = Times(int(match["mtime"]), int(match["atime"]))
            session.send(OK)
            continue
        if record == b"E":
            session.send(OK)
            if recursive and len(path) >= 2:
                path.pop()
                continue
            return
        match = _RECORD.fullmatch(record)
        if match is None:
            raise session.refuse(f"protocol error: unknown signal {record[:1].decode(errors='replace')}")
        name = match["name"].decode(errors="surrogateescape")
        if name in ("..", "") or "/" in name:
            raise session.refuse(f"protocol error: unexpected filename: {name}")
        mode = int(match["mode"], 8)
        if match["kind"] == b"D":
            if not recursive:
                raise session.refuse("protocol error: directory received in non-recursive mode")
            if first:  # the top directory itself is ``local``
                _set_times(session, local, times)
            else:
                directory = os.path.join(*path, name)
                _make_directory(session, directory, mode)
                _set_times(session, directory, times)
                path.append(name)
            session.send(OK)
        else:
            target = os.path.join(*path, name) if recursive else local
            _receive_file(session, target, mode, int(match["size"]), times)
            session.send(OK)
            if not recursive:
                return
        first, times = False, None


def _make_directory(session: Session, path: str, mode: int) -> None:
    if os.path.isdir(path):
        return
    if os.path.exists(path):
        raise session.refuse(f"{path} is not a directory")
    try:
        os.mkdir(path, mode)
    except OSError as err:
        raise session.refuse(_os_reason("mkdir", path, err)) from None


def copy_file_from_remote(transport: Any, remote: str, local: str, *, preserve: bool) -> None:
    session = Session(transport, remote_command("f", remote, preserve=preserve))
    try:
        _receive(session, local, recursive=False)
        session.finish()
    finally:
        session.close()


def copy_directory_from_remote(transport: Any, remote: str, local: str, *, preserve: bool) -> None:
    session = Session(transport, remote_command("f", remote, recursive=True, preserve=preserve))
    try:
        _receive(session, local, recursive=True)
        session.finish()
    finally:
        session.close()
