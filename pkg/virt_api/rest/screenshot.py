"""``vnc/screenshot``: virt-api itself speaks RFB to the VMI's VNC server and answers one frame as a PNG.

As KubeVirt does, virt-api opens the handler's VNC websocket with ``preserveSession=true`` (a screenshot
never takes over a viewer's session), shares the desktop, optionally wiggles the pointer to wake a
screensaver, asks for one full, non-incremental framebuffer update and paints its rectangles. The pixel
format and raw encoding are set explicitly so the bytes can be read without guessing the server's defaults.
"""

from __future__ import annotations

import asyncio
import struct
import zlib
from dataclasses import dataclass
from typing import Protocol

RFB_VERSION = b"RFB 003.008\n"
SECURITY_NONE = 1
SHARED = 1
# 32 bits a pixel, depth 24, little-endian true colour: each pixel is the bytes B, G, R, unused.
PIXEL_FORMAT = struct.pack(">BBBBHHHBBB3x", 32, 24, 0, 1, 255, 255, 255, 16, 8, 0)
RAW_ENCODING = 0
FRAMEBUFFER_UPDATE, SET_COLOUR_MAP, BELL, SERVER_CUT_TEXT = 0, 1, 2, 3
FRAME_WAIT = 2.0  # KubeVirt's wait for the server's answer to the update request
HANDSHAKE_WAIT = 10.0  # a server that never greets must not hold the request forever


class ScreenshotError(Exception):
    """The RFB exchange failed; the text is what the caller reports."""


class ByteStream(Protocol):
    async def read(self) -> bytes:
        """The next chunk of the server's byte stream (empty at its end)."""

    async def write(self, data: bytes) -> None: ...


@dataclass
class Frame:
    width: int
    height: int
    rgb: bytearray


class _Reader:
    def __init__(self, stream: ByteStream) -> None:
        self._stream = stream
        self._buffer = bytearray()

    async def exactly(self, count: int) -> bytes:
        while len(self._buffer) < count:
            chunk = await self._stream.read()
            if not chunk:
                raise ScreenshotError("the VNC server closed the connection")
            self._buffer += chunk
        data = bytes(self._buffer[:count])
        del self._buffer[:count]
        return data

    async def u8(self) -> int:
        return int((await self.exactly(1))[0])

    async def u32(self) -> int:
        value: int = struct.unpack(">I", await self.exactly(4))[0]
        return value

    async def text(self) -> str:
        return (await self.exactly(await self.u32())).decode(errors="replace")


async def _handshake(reader: _Reader, stream: ByteStream) -> tuple[int, int]:
    """Version 3.8, no authentication, shared desktop; returns the framebuffer's width and height."""
    version = await reader.exactly(12)
    if not version.startswith(b"RFB "):
        raise ScreenshotError(f"not a VNC server: {version!r}")
    await stream.write(RFB_VERSION)
    types = await reader.exactly(await reader.u8())
    if not types:
        raise ScreenshotError(f"the VNC server refused the connection: {await reader.text()}")
    if SECURITY_NONE not in types:
        raise ScreenshotError("the VNC server asks for an authentication this client lacks")
    await stream.write(bytes([SECURITY_NONE]))
    if await reader.u32() != 0:
        raise ScreenshotError(f"the VNC server refused the connection: {await reader.text()}")
    await stream.write(bytes([SHARED]))
    width, height = struct.unpack(">HH16x", await reader.exactly(20))
    await reader.text()  # the desktop's name
    return int(width), int(height)


async def _skip_other_message(reader: _Reader, kind: int) -> None:
    if kind == BELL:
        return
    if kind == SERVER_CUT_TEXT:
        await reader.exactly(3)
        await reader.text()
        return
    if kind == SET_COLOUR_MAP:
        _first, count = struct.unpack(">xHH", await reader.exactly(5))
        await reader.exactly(6 * count)
        return
    raise ScreenshotError(f"unexpected VNC server message type {kind}")


async def _read_update(reader: _Reader, frame: Frame) -> int:
    """Reads server messages up to one framebuffer update, paints it; returns its rectangle count."""
    while (kind := await reader.u8()) != FRAMEBUFFER_UPDATE:
        await _skip_other_message(reader, kind)
    (count,) = struct.unpack(">xH", await reader.exactly(3))
    for _ in range(count):
        x, y, w, h, encoding = struct.unpack(">HHHHi", await reader.exactly(12))
        if encoding != RAW_ENCODING:
            raise ScreenshotError(f"unexpected VNC encoding {encoding}")
        _paint(frame, x, y, w, h, await reader.exactly(w * h * 4))
    return int(count)


def _paint(frame: Frame, x: int, y: int, w: int, h: int, pixels: bytes) -> None:
    rgb = bytearray(w * h * 3)
    rgb[0::3], rgb[1::3], rgb[2::3] = pixels[2::4], pixels[1::4], pixels[0::4]
    stride = w * 3
    visible = min(w, max(frame.width - x, 0)) * 3  # a rectangle past the edge is clipped
    for row in range(min(h, max(frame.height - y, 0))):
        target = ((y + row) * frame.width + x) * 3
        frame.rgb[target : target + visible] = rgb[row * stride : row * stride + visible]


async def capture(stream: ByteStream, *, move_cursor: bool) -> Frame:
    """One full frame of the VNC server behind ``stream``."""
    reader = _Reader(stream)
    try:
        width, height = await asyncio.wait_for(_handshake(reader, stream), HANDSHAKE_WAIT)
    except TimeoutError:
        raise ScreenshotError("timed out waiting for the VNC server's handshake") from None
    await stream.write(b"\x00\x00\x00\x00" + PIXEL_FORMAT)  # SetPixelFormat
    await stream.write(struct.pack(">BxHi", 2, 1, RAW_ENCODING))  # SetEncodings: raw only
    if move_cursor:  # a pointer move wakes a sleeping screen
        await stream.write(struct.pack(">BBHH", 5, 0, 0, 0) + struct.pack(">BBHH", 5, 0, 1, 1))
    await stream.write(struct.pack(">BBHHHH", 3, 0, 0, 0, width, height))
    frame = Frame(width, height, bytearray(width * height * 3))
    try:
        rectangles = await asyncio.wait_for(_read_update(reader, frame), FRAME_WAIT)
    except TimeoutError:
        raise ScreenshotError("timed out waiting for VNC server messages") from None
    if rectangles == 0:
        raise ScreenshotError("failed to retrieve the VNC screen")
    return frame


def encode_png(frame: Frame) -> bytes:
    """An 8-bit RGB PNG (no filter on any row)."""
    row = frame.width * 3
    raw = b"".join(b"\x00" + bytes(frame.rgb[y * row : (y + 1) * row]) for y in range(frame.height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", frame.width, frame.height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(raw, 6))
        + chunk(b"IEND", b"")
    )
