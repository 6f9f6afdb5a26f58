"""A unix socket server standing in for QEMU's serial or VNC socket: it greets each client, then echoes."""

from __future__ import annotations

import os
import socket
import threading
from pathlib import Path


def bind_unix(path: Path) -> socket.socket:
    """A listening unix socket at ``path``, however long (bound through a directory descriptor)."""
    directory = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    listener = socket.socket(socket.AF_UNIX)
    try:
        listener.bind(f"/proc/self/fd/{directory}/{path.name}")
    finally:
        os.close(directory)
    listener.listen()
    return listener


class EchoServer:
    """Answers every connection with ``greeting``, then echoes what it receives, in threads."""

    def __init__(self, path: Path, greeting: bytes) -> None:
        self.listener = bind_unix(path)
        self.greeting = greeting
        self.connections = 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._echo, args=(connection,), daemon=True).start()

    def _echo(self, connection: socket.socket) -> None:
        with connection:
            connection.sendall(self.greeting)
            while data := connection.recv(65536):
                connection.sendall(data)

    def close(self) -> None:
        self.listener.close()
