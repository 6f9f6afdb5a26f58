"""Files inside a pod's root filesystem, opened so that nothing in the pod can redirect us out of it.

A pod controls its own filesystem: a symlink there must not make a privileged component write on the
host. Paths are resolved with ``openat2(RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS)``: symlinks are
followed as if the pod's root were ``/`` (so ``/var/run -> /run`` works) and ``..`` never climbs
above it; ``/proc`` magic links are refused.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path, PurePosixPath

from kubevirt import safepath


class PodPathError(OSError):
    """A path inside the pod could not be opened safely."""


def _openat2(dir_fd: int, path: str, flags: int, mode: int = 0) -> int:
    try:
        return safepath.openat2(dir_fd, path, flags, resolve=safepath.IN_ROOT, mode=mode)
    except OSError as err:
        raise PodPathError(err.errno, f"{path}: {os.strerror(err.errno or 0)}") from err


class PodRoot:
    """A pod's root directory (``/proc/<pid>/root`` seen from the node, or any directory in tests)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    @classmethod
    def of_process(cls, pid: int) -> PodRoot:
        return cls(Path(f"/proc/{pid}/root"))

    def _root_fd(self) -> int:
        return os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)

    def _open(self, relative: str, flags: int, mode: int = 0) -> int:
        root = self._root_fd()
        try:
            return _openat2(root, relative.lstrip("/"), flags, mode)
        finally:
            os.close(root)

    def makedirs(self, relative: str, mode: int = 0o750) -> None:
        parts = PurePosixPath(relative.lstrip("/")).parts
        for depth in range(1, len(parts) + 1):
            parent = "/".join(parts[: depth - 1]) or "."
            fd = self._open(parent, os.O_RDONLY | os.O_DIRECTORY)
            try:
                os.mkdir(parts[depth - 1], mode, dir_fd=fd)
            except FileExistsError:
                pass
            finally:
                os.close(fd)

    def write(self, relative: str, data: bytes, mode: int = 0o644) -> None:
        """Create or replace a regular file (atomically: a reader sees the old or the new content)."""
        path = PurePosixPath(relative.lstrip("/"))
        self.makedirs(str(path.parent))
        directory = self._open(str(path.parent), os.O_RDONLY | os.O_DIRECTORY)
        temporary = f".{path.name}.tmp"
        try:
            fd = os.open(
                temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, mode, dir_fd=directory
            )
            try:
                os.write(fd, data)
                os.fchmod(fd, mode)
            finally:
                os.close(fd)
            os.rename(temporary, path.name, src_dir_fd=directory, dst_dir_fd=directory)
        finally:
            os.close(directory)

    def open_directory(self, relative: str) -> int:
        """A descriptor of a directory in the pod (the caller closes it), e.g. to reach a socket in it
        through ``/proc/self/fd/<fd>/<name>``."""
        return self._open(relative, os.O_RDONLY | os.O_DIRECTORY)

    def read(self, relative: str) -> bytes:
        fd = self._open(relative, os.O_RDONLY | os.O_NOFOLLOW)
        try:
            with os.fdopen(fd, "rb", closefd=False) as stream:
                return stream.read()
        finally:
            os.close(fd)

    def remove(self, relative: str) -> None:
        """Remove a file; an absent one is no error."""
        path = PurePosixPath(relative.lstrip("/"))
        try:
            directory = self._open(str(path.parent), os.O_RDONLY | os.O_DIRECTORY)
        except PodPathError as err:
            if err.errno == errno.ENOENT:
                return
            raise
        try:
            os.unlink(path.name, dir_fd=directory)
        except FileNotFoundError:
            pass
        finally:
            os.close(directory)
