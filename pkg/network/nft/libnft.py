"""The nftables library (libnftables, what ``nft`` itself is built on), called in-process.

Commands are given in nft's own syntax, one per call, so the rules read exactly as KubeVirt writes
them; the library parses and commits each one through netlink in the calling thread's network namespace.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import threading
from collections.abc import Iterable

_LIBRARY = "libnftables.so.1"
_OUTPUT_BUFFER = 1 << 0
_ERROR_BUFFER = 1 << 1


class NftError(RuntimeError):
    """nftables refused a command."""


_lib: ctypes.CDLL | None = None
_load_lock = threading.Lock()


def _library() -> ctypes.CDLL:
    global _lib
    with _load_lock:
        if _lib is None:
            try:
                lib = ctypes.CDLL(ctypes.util.find_library("nftables") or _LIBRARY)
            except OSError as err:
                raise NftError(f"libnftables is not installed: {err}") from err
            lib.nft_ctx_new.restype = ctypes.c_void_p
            lib.nft_ctx_new.argtypes = [ctypes.c_uint32]
            lib.nft_ctx_free.argtypes = [ctypes.c_void_p]
            lib.nft_ctx_buffer_output.argtypes = [ctypes.c_void_p]
            lib.nft_ctx_buffer_error.argtypes = [ctypes.c_void_p]
            lib.nft_ctx_get_output_buffer.restype = ctypes.c_char_p
            lib.nft_ctx_get_output_buffer.argtypes = [ctypes.c_void_p]
            lib.nft_ctx_get_error_buffer.restype = ctypes.c_char_p
            lib.nft_ctx_get_error_buffer.argtypes = [ctypes.c_void_p]
            lib.nft_run_cmd_from_buffer.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
            lib.nft_run_cmd_from_buffer.restype = ctypes.c_int
            _lib = lib
        return _lib


class Nft:
    """One libnftables context; use it from one thread (the one inside the target namespace)."""

    def __init__(self) -> None:
        self._lib = _library()
        self._ctx = self._lib.nft_ctx_new(0)
        if not self._ctx:
            raise NftError("nft_ctx_new failed")
        self._lib.nft_ctx_buffer_output(self._ctx)
        self._lib.nft_ctx_buffer_error(self._ctx)

    def run(self, command: str) -> str:
        """Run one command; its output (for ``list``); :class:`NftError` with nft's message otherwise."""
        code = self._lib.nft_run_cmd_from_buffer(self._ctx, command.encode())
        if code != 0:
            message = (self._lib.nft_ctx_get_error_buffer(self._ctx) or b"").decode(errors="replace")
            raise NftError(f"nft {command}: {message.strip()}")
        return (self._lib.nft_ctx_get_output_buffer(self._ctx) or b"").decode(errors="replace")

    def run_all(self, commands: Iterable[str]) -> None:
        for command in commands:
            self.run(command)

    def close(self) -> None:
        if self._ctx:
            self._lib.nft_ctx_free(self._ctx)
            self._ctx = None

    def __enter__(self) -> Nft:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
