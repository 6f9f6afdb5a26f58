"""Opening paths inside a directory tree without ever leaving it, whatever symlinks the tree holds.

A launcher pod's volumes are filled by others (the kubelet, a user's image, a host directory); KubeVirt's
CVEs in this area were symlinks that led a privileged process out of such a tree. Every lookup here goes
through Linux's ``openat2`` (5.6+): with :data:`IN_ROOT` symlinks are resolved as if the tree's top were
``/`` (the kubelet's ``..data`` links keep working, ``/etc/passwd`` means ``<root>/etc/passwd``); with
:data:`NO_SYMLINKS` any symlink on the way is refused. ``..`` never climbs above the root either way.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import socket
import stat
from collections.abc import Iterator
from pathlib import Path

# include/uapi/linux/openat2.h
_RESOLVE_NO_MAGICLINKS = 0x02
_RESOLVE_NO_SYMLINKS = 0x04
_RESOLVE_BENEATH = 0x08
_RESOLVE_IN_ROOT = 0x10
_SYS_OPENAT2 = 437  # the same number on every Linux architecture (asm-generic)

IN_ROOT = _RESOLVE_IN_ROOT | _RESOLVE_NO_MAGICLINKS
NO_SYMLINKS = _RESOLVE_BENEATH | _RESOLVE_NO_SYMLINKS | _RESOLVE_NO_MAGICLINKS


class UnsafePathError(OSError):
    """The path leads out of its root, through a refused symlink, or to the wrong kind of file."""


class _OpenHow(ctypes.Structure):
    _fields_ = (("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64))


_libc = ctypes.CDLL(None, use_errno=True)


def openat2(dir_fd: int, path: str, flags: int, *, resolve: int, mode: int = 0) -> int:
    """``openat2(2)``: a new file descriptor (close-on-exec) for ``path`` below ``dir_fd``."""
    creating = flags & (os.O_CREAT | getattr(os, "O_TMPFILE", 0))
    how = _OpenHow(flags | os.O_CLOEXEC, mode if creating else 0, resolve)
    while True:
        fd = int(
            _libc.syscall(_SYS_OPENAT2, dir_fd, os.fsencode(path), ctypes.byref(how), ctypes.sizeof(how))
        )
        if fd >= 0:
            return fd
        code = ctypes.get_errno()
        if code in (errno.EINTR, errno.EAGAIN):
            continue  # EAGAIN: a rename raced the lookup; the kernel asks for a retry
        if code in (errno.ELOOP, errno.EXDEV):
            raise UnsafePathError(code, "leads out of its root or through a symlink", path)
        raise OSError(code, os.strerror(code), path)


@contextlib.contextmanager
def closing(fd: int) -> Iterator[int]:
    """``fd`` for the block, closed however the block ends."""
    try:
        yield fd
    finally:
        os.close(fd)


@contextlib.contextmanager
def opened(root: Path | str, path: str, flags: int = os.O_RDONLY, *, resolve: int = IN_ROOT) -> Iterator[int]:
    """``path`` (relative to ``root``, or absolute meaning ``root``'s top) opened inside ``root``."""
    root_fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        fd = openat2(root_fd, path.lstrip("/") or ".", flags, resolve=resolve)
    finally:
        os.close(root_fd)
    try:
        yield fd
    finally:
        os.close(fd)


def read_file(root: Path | str, path: str, *, limit: int, resolve: int = IN_ROOT) -> bytes:
    """The content of the regular file ``path`` inside ``root``; more than ``limit`` bytes is an error."""
    with opened(root, path, os.O_RDONLY | os.O_NONBLOCK, resolve=resolve) as fd:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise UnsafePathError(errno.EINVAL, "not a regular file", path)
        if info.st_size > limit:
            raise ValueError(f"{path}: {info.st_size} bytes, more than the {limit} allowed")
        chunks: list[bytes] = []
        size = 0
        while chunk := os.read(fd, min(1 << 20, limit + 1 - size)):
            chunks.append(chunk)
            size += len(chunk)
            if size > limit:
                raise ValueError(f"{path}: more than the {limit} bytes allowed")
    return b"".join(chunks)


def plain_name(name: str) -> bool:
    """Whether ``name`` is one path component that stays where it is put (no ``/``, not ``.``/``..``)."""
    return bool(name) and name not in (".", "..") and "/" not in name and "\0" not in name


def open_socket(dir_fd: int, name: str) -> int:
    """An ``O_PATH`` descriptor of the unix socket ``name`` in the directory ``dir_fd``.

    The last component is not followed either: a symlink, or anything but a socket, is refused. The
    descriptor names exactly the inode checked; connect through :func:`fd_path` to reach it.
    """
    if not plain_name(name):
        raise UnsafePathError(errno.EINVAL, "not a plain file name", name)
    try:
        fd = os.open(name, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise UnsafePathError(errno.ELOOP, "a symlink", name) from None
        raise
    mode = os.fstat(fd).st_mode  # O_PATH|O_NOFOLLOW on a symlink opens the link itself
    if not stat.S_ISSOCK(mode):
        os.close(fd)
        raise UnsafePathError(errno.ENOTSOCK, "a symlink" if stat.S_ISLNK(mode) else "not a socket", name)
    return fd


def fd_path(fd: int) -> str:
    """A path naming the open file ``fd`` itself (short enough for a unix socket address)."""
    return f"/proc/self/fd/{fd}"


def connect_fd(fd: int, *, timeout: float | None = None) -> socket.socket:
    """A stream connection to the unix socket that the ``O_PATH`` descriptor ``fd`` names."""
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        connection.settimeout(timeout)
        connection.connect(fd_path(fd))
    except OSError:
        connection.close()
        raise
    return connection


def connect_socket(dir_fd: int, name: str, *, timeout: float | None = None) -> socket.socket:
    """A stream connection to the unix socket ``name`` in ``dir_fd``, never through a symlink."""
    fd = open_socket(dir_fd, name)
    try:
        return connect_fd(fd, timeout=timeout)
    finally:
        os.close(fd)
