"""virt-api's RFB client against a scripted VNC server: the handshake it makes, the frame it paints."""

from __future__ import annotations

import asyncio
import struct
import zlib

import pytest

from kubevirt.virt_api.rest import screenshot
from kubevirt.virt_api.rest.screenshot import (
    PIXEL_FORMAT,
    Frame,
    ScreenshotError,
    capture,
    encode_png,
)


class ScriptedServer:
    """Answers from a fixed byte script (in odd-sized chunks) and records what the client wrote."""

    def __init__(self, script: bytes, chunk: int = 7) -> None:
        self._chunks = [script[i : i + chunk] for i in range(0, len(script), chunk)]
        self.written = b""

    async def read(self) -> bytes:
        return self._chunks.pop(0) if self._chunks else b""

    async def write(self, data: bytes) -> None:
        self.written += data


def server_init(width: int, height: int) -> bytes:
    name = b"QEMU (console)"
    pixel_format = struct.pack(">BBBBHHHBBB3x", 32, 24, 0, 1, 255, 255, 255, 16, 8, 0)
    return struct.pack(">HH", width, height) + pixel_format + struct.pack(">I", len(name)) + name


def handshake(width: int, height: int) -> bytes:
    return b"RFB 003.008\n" + bytes([2, 2, 1]) + struct.pack(">I", 0) + server_init(width, height)


def raw_rect(x: int, y: int, pixels: list[list[tuple[int, int, int]]]) -> bytes:
    body = b"".join(bytes([b, g, r, 0]) for row in pixels for (r, g, b) in row)
    return struct.pack(">HHHHi", x, y, len(pixels[0]), len(pixels), 0) + body


RED, GREEN, BLUE, WHITE = (255, 0, 0), (0, 255, 0), (0, 0, 255), (255, 255, 255)


def test_the_client_shares_the_desktop_and_asks_for_one_full_raw_frame() -> None:
    update = b"\x00\x00" + struct.pack(">H", 2)
    update += raw_rect(0, 0, [[RED, GREEN, BLUE]])
    update += raw_rect(0, 1, [[WHITE, WHITE, RED]])
    server = ScriptedServer(handshake(3, 2) + b"\x02" + update)  # a bell before the update is skipped
    frame = asyncio.run(capture(server, move_cursor=False))
    assert (frame.width, frame.height) == (3, 2)
    assert bytes(frame.rgb) == bytes([*RED, *GREEN, *BLUE, *WHITE, *WHITE, *RED])
    assert server.written == (
        b"RFB 003.008\n"
        + b"\x01"  # security type None
        + b"\x01"  # shared: a viewer keeps its session
        + b"\x00\x00\x00\x00"
        + PIXEL_FORMAT
        + b"\x02\x00\x00\x01\x00\x00\x00\x00"  # SetEncodings: raw
        + b"\x03\x00\x00\x00\x00\x00\x00\x03\x00\x02"  # the whole screen, not incremental
    )


def test_move_cursor_wiggles_the_pointer_before_the_request() -> None:
    server = ScriptedServer(handshake(1, 1) + b"\x00\x00\x00\x01" + raw_rect(0, 0, [[RED]]))
    asyncio.run(capture(server, move_cursor=True))
    assert b"\x05\x00\x00\x00\x00\x00\x05\x00\x00\x01\x00\x01\x03\x00" in server.written


def test_an_update_without_rectangles_is_an_error() -> None:
    server = ScriptedServer(handshake(2, 2) + b"\x00\x00\x00\x00")
    with pytest.raises(ScreenshotError, match="failed to retrieve the VNC screen"):
        asyncio.run(capture(server, move_cursor=False))


def test_a_refusing_server_reports_its_reason() -> None:
    reason = b"too many connections"
    server = ScriptedServer(b"RFB 003.008\n\x00" + struct.pack(">I", len(reason)) + reason)
    with pytest.raises(ScreenshotError, match="too many connections"):
        asyncio.run(capture(server, move_cursor=False))


def test_a_closed_stream_is_an_error_not_a_hang() -> None:
    with pytest.raises(ScreenshotError, match="closed"):
        asyncio.run(capture(ScriptedServer(handshake(2, 2)), move_cursor=False))


def test_a_rectangle_past_the_edge_is_clipped() -> None:
    server = ScriptedServer(handshake(2, 1) + b"\x00\x00\x00\x01" + raw_rect(1, 0, [[RED, BLUE]]))
    frame = asyncio.run(capture(server, move_cursor=False))
    assert bytes(frame.rgb) == bytes([0, 0, 0, *RED])


def test_the_png_holds_the_frame_row_by_row() -> None:
    frame = Frame(2, 2, bytearray([*RED, *GREEN, *BLUE, *WHITE]))
    png = encode_png(frame)
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert struct.unpack(">IIBBBBB", png[16:29]) == (2, 2, 8, 2, 0, 0, 0)
    idat = png.index(b"IDAT")
    (length,) = struct.unpack(">I", png[idat - 4 : idat])
    data = png[idat + 4 : idat + 4 + length]
    assert zlib.decompress(data) == bytes([0, *RED, *GREEN, 0, *BLUE, *WHITE])
    (crc,) = struct.unpack(">I", png[idat + 4 + length : idat + 8 + length])
    assert crc == zlib.crc32(b"IDAT" + data)
    assert png.endswith(b"IEND\xaeB`\x82")


class SilentServer:
    async def read(self) -> bytes:
        await asyncio.sleep(3600)
        return b""

    async def write(self, data: bytes) -> None:
        del data


def test_a_server_that_never_greets_times_out(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(screenshot, "HANDSHAKE_WAIT", 0.05)
    with pytest.raises(ScreenshotError, match="timed out waiting for the VNC server's handshake"):
        asyncio.run(capture(SilentServer(), move_cursor=False))


def test_a_frame_that_never_comes_times_out(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(screenshot, "FRAME_WAIT", 0.05)

    class GreetsThenSilent(ScriptedServer):
        async def read(self) -> bytes:
            chunk = await super().read()
            if not chunk:
                await asyncio.sleep(3600)
            return chunk

    with pytest.raises(ScreenshotError, match="timed out waiting for VNC server messages"):
        asyncio.run(capture(GreetsThenSilent(handshake(2, 2)), move_cursor=False))
