"""A TLS server presenting a given certificate and keeping every byte a client sends it: it stands for a
peer that is not who a KubeVirt client expects, to show that nothing reaches it."""

from __future__ import annotations

import socket
import ssl
import threading
from pathlib import Path


class TLSRecorder:
    """Serves ``cert``/``key`` on 127.0.0.1, answers b"ok" to each chunk and keeps what it received."""

    def __init__(self, cert: Path, key: Path) -> None:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(str(cert), str(key))
        self._context = context
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self._listener.getsockname()[1])
        self.received = b""
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                raw, _ = self._listener.accept()
            except OSError:
                return
            try:
                with self._context.wrap_socket(raw, server_side=True) as tls:
                    tls.settimeout(5)
                    while data := tls.recv(1024):
                        self.received += data
                        tls.sendall(b"ok")
            except OSError:
                pass  # a client that refused the certificate hung up

    def close(self) -> None:
        self._listener.close()
