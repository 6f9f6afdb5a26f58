"""One command client per VMI's launcher, kept from one reconcile to the next.

A client is reused only while it was dialled for the same socket path (which names the launcher's pod) and
that path still holds the same socket (device and inode): a new launcher pod, or a launcher that started
again in its pod, gets a new client, dialled through every check a first dial makes. A client whose call
failed on the connection itself is dropped by its user, so the next reconcile dials again instead of
waiting on a channel's reconnection backoff, or on a descriptor of a socket nobody listens on any more.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, Protocol, TypeVar


class Closable(Protocol):
    def close(self) -> None: ...


C = TypeVar("C", bound=Closable)


@dataclass(frozen=True)
class _Entry(Generic[C]):
    socket: Path
    identity: Hashable
    client: C


class LauncherClients(Generic[C]):
    def __init__(self, connect: Callable[[Path], C], identify: Callable[[Path], Hashable]) -> None:
        """``connect`` dials a launcher socket (with its checks); ``identify`` names the socket a path
        holds now, and raises what ``connect`` raises for a socket it would refuse."""
        self._connect = connect
        self._identify = identify
        self._lock = threading.Lock()
        self._clients: dict[str, _Entry[C]] = {}

    def get(self, uid: str, socket: Path) -> C:
        """The client for the launcher of the VMI ``uid`` at ``socket``: the kept one if it still fits."""
        try:
            identity = self._identify(socket)
        except BaseException:
            self.drop(uid)  # the path holds no socket it may use: not the one the kept client reached
            raise
        with self._lock:
            entry = self._clients.get(uid)
            if entry is not None and entry.socket == socket and entry.identity == identity:
                return entry.client
            self._clients.pop(uid, None)
        if entry is not None:
            entry.client.close()
        client = self._connect(socket)
        with self._lock:
            replaced = self._clients.get(uid)
            self._clients[uid] = _Entry(socket, identity, client)
        if replaced is not None:  # another worker dialled it meanwhile: keep the newest
            replaced.client.close()
        return client

    def drop(self, uid: str, client: C | None = None) -> None:
        """Closes the client kept for ``uid`` (only if it is ``client``, when given)."""
        with self._lock:
            entry = self._clients.get(uid)
            if entry is None or (client is not None and entry.client is not client):
                return
            del self._clients[uid]
        entry.client.close()

    def drop_all_but(self, uids: Iterable[str]) -> None:
        keep = set(uids)
        with self._lock:
            gone = [self._clients.pop(uid) for uid in list(self._clients) if uid not in keep]
        for entry in gone:
            entry.client.close()

    def close(self) -> None:
        self.drop_all_but(())

    def __len__(self) -> int:
        with self._lock:
            return len(self._clients)
