"""Websocket streams to a VMI's subresources (console, VNC) through the API server, opened as KubeVirt's
client-go opens them: ``wss://<server>/apis/subresources.kubevirt.io/v1/namespaces/<ns>/
virtualmachineinstances/<name>/<subresource>`` with the subprotocol ``plain.kubevirt.io`` and the
kubeconfig's credentials and TLS settings. Bytes go both ways as binary messages.

A refused upgrade becomes :class:`StreamError` with client-go's wording: the server's ``Status`` message,
or the status code and the text the server answered.
"""

from __future__ import annotations

import contextlib
import json
import socket
import sys
import threading
from collections.abc import Callable, Mapping
from typing import Any, Protocol
from urllib.parse import urlencode, urlsplit, urlunsplit

import websocket

from kubevirt.client import KubeClient
from kubevirt.client.connection import Connection

PLAIN_SUBPROTOCOL = "plain.kubevirt.io"
SUBRESOURCE_PATH = "/apis/subresources.kubevirt.io/v1/namespaces/{namespace}/{resource}/{name}/{sub}"
VMIS = "virtualmachineinstances"
BAD_REQUEST = 400
HANDSHAKE_TIMEOUT = 30.0


class StreamError(Exception):
    """The stream could not be opened; ``status`` is the HTTP code when the server answered."""

    def __init__(self, message: str, status: int = 0) -> None:
        super().__init__(message)
        self.status = status


def stream_url(
    host: str, namespace: str, name: str, subresource: str, query: Mapping[str, str], resource: str = VMIS
) -> str:
    path = SUBRESOURCE_PATH.format(namespace=namespace, resource=resource, name=name, sub=subresource)
    return websocket_url(host, path, query)


def websocket_url(host: str, path: str, query: Mapping[str, str]) -> str:
    """The ``ws(s)://`` URL of an API server path, below the server URL's own path prefix."""
    parts = urlsplit(host)
    scheme = {"https": "wss", "http": "ws"}.get(parts.scheme)
    if scheme is None:
        raise StreamError(f"Unsupported Protocol {parts.scheme}")
    return urlunsplit((scheme, parts.netloc, parts.path.rstrip("/") + path, urlencode(dict(query)), ""))


def refusal(status: int, headers: Mapping[str, str] | None, body: bytes | None) -> StreamError:
    """client-go's error for a refused upgrade (``EnrichError``)."""
    base = f"Can't connect to websocket ({status}): websocket: bad handshake"
    content_type = {k.lower(): v for k, v in (headers or {}).items()}.get("content-type", "")
    if body and "application/json" in content_type:
        try:
            decoded = json.loads(body)
        except ValueError:
            return StreamError(base, status)
        if (
            isinstance(decoded, dict)
            and decoded.get("kind") == "Status"
            and decoded.get("status") != "Success"
        ):
            return StreamError(str(decoded.get("message") or ""), status)
    elif body and "text/plain" in content_type:
        return StreamError(f"{base}: application info: {body.decode(errors='replace')}", status)
    return StreamError(base, status)


def open_stream(
    client: KubeClient,
    namespace: str,
    name: str,
    subresource: str,
    query: Mapping[str, str] | None = None,
    *,
    resource: str = VMIS,
) -> websocket.WebSocket:
    """A connected websocket; the caller closes it."""
    url = stream_url(client.connection.host, namespace, name, subresource, query or {}, resource)
    return dial(client.connection, url, [PLAIN_SUBPROTOCOL])


def dial(connection: Connection, url: str, subprotocols: list[str]) -> websocket.WebSocket:
    """A websocket to the API server with the kubeconfig's credentials and TLS settings."""
    sslopt = {}
    if url.startswith("wss:"):
        context = connection.ssl_context()
        sslopt = {"context": context, "check_hostname": context.check_hostname}
    headers = [f"{key}: {value}" for key, value in connection.auth_headers().items()]
    try:
        return websocket.create_connection(
            url,
            subprotocols=subprotocols,
            header=headers,
            sslopt=sslopt,
            timeout=HANDSHAKE_TIMEOUT,
            enable_multithread=True,
        )
    except websocket.WebSocketBadStatusException as err:
        raise refusal(err.status_code, err.resp_headers, err.resp_body) from None
    except (websocket.WebSocketException, OSError) as err:
        raise StreamError(f"Can't connect to websocket: {err}") from None


class MessageStream(Protocol):
    """What the relays below need of a stream: a websocket, or an adapter framing one (port-forward's
    channels)."""

    def recv_data(self) -> tuple[int, bytes]: ...

    def send_binary(self, payload: bytes) -> Any: ...

    def send_close(self) -> None: ...

    def shutdown(self) -> Any: ...


class StreamEndedError(Exception):
    """The server ended the stream; ``abnormal`` when it went away without a close frame."""

    def __init__(self, abnormal: bool) -> None:
        super().__init__("websocket: close 1006 (abnormal closure): unexpected EOF" if abnormal else "closed")
        self.abnormal = abnormal


def copy_from_stream(ws: MessageStream, write: Callable[[bytes], None]) -> None:
    """Writes every message's payload until the stream ends (raises :class:`StreamEndedError`)."""
    while True:
        try:
            opcode, data = ws.recv_data()
        except (websocket.WebSocketConnectionClosedException, OSError):
            raise StreamEndedError(abnormal=True) from None
        if opcode == websocket.ABNF.OPCODE_CLOSE:
            raise StreamEndedError(abnormal=False)
        if opcode in (websocket.ABNF.OPCODE_BINARY, websocket.ABNF.OPCODE_TEXT):
            write(data)


def copy_to_stream(read: Callable[[], bytes], ws: MessageStream) -> None:
    """Sends what ``read`` returns as binary messages until it returns nothing or the stream closed."""
    while chunk := read():
        try:
            ws.send_binary(chunk)
        except (websocket.WebSocketConnectionClosedException, OSError):
            return


def end_stream(ws: MessageStream, reader: threading.Thread, timeout: float = 3.0) -> None:
    """Closes the stream while ``reader`` may still be reading it: a close frame, then the reader gets the
    server's answer and ends, then the socket goes."""
    with contextlib.suppress(websocket.WebSocketException, OSError):
        ws.send_close()
    reader.join(timeout)
    ws.shutdown()


def pump(
    ws: MessageStream, read: Callable[[], bytes], write: Callable[[bytes], None]
) -> StreamEndedError | None:
    """Relays ``read()`` into the stream and the stream into ``write`` until either side ends, then
    closes the stream. Returns how the server ended it, or None when the local side ended first."""
    ended: list[StreamEndedError] = []
    done, local_end = threading.Event(), threading.Event()

    def from_stream() -> None:
        try:
            copy_from_stream(ws, write)
        except StreamEndedError as err:
            ended.append(err)
        except OSError:  # the local side can take no more
            local_end.set()
        finally:
            done.set()

    def to_stream() -> None:
        try:
            copy_to_stream(read, ws)
        except OSError:
            pass
        finally:
            local_end.set()
            done.set()

    # Daemon threads: a read blocked on a terminal must not keep virtctl alive.
    reader = threading.Thread(target=from_stream, name="stream-output", daemon=True)
    reader.start()
    threading.Thread(target=to_stream, name="stream-input", daemon=True).start()
    done.wait()
    local = local_end.is_set()
    end_stream(ws, reader)
    return None if local or not ended else ended[0]


def relay_socket(ws: MessageStream, connection: socket.socket, read_size: int = 32 * 1024) -> None:
    """Copies between the stream and a local connection, both ways, until either side ends."""
    pump(ws, lambda: connection.recv(read_size), connection.sendall)
    with contextlib.suppress(OSError):
        connection.shutdown(socket.SHUT_RDWR)  # wakes a recv blocked in the other thread
    connection.close()


def write_stdout(data: bytes) -> None:
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()
