"""The Content-Type Go's ``http.ServeContent`` gives a file: by its extension from Go's built-in table,
else by sniffing its first 512 bytes as ``http.DetectContentType`` does.

The sniffer knows the signatures a volume's files plausibly start with (HTML, XML, PDF, images, fonts,
archives, text); Go's MP4, AIFF, MP3 and MIDI signatures are left out, so such files are
``application/octet-stream`` here.
"""

from __future__ import annotations

import posixpath

SNIFF_LEN = 512
OCTET_STREAM = "application/octet-stream"
_TEXT = "text/plain; charset=utf-8"

# Go's mime package's built-in table (the exporter's image has no mime.types to add to it).
_BY_EXTENSION = {
    ".avif": "image/avif",
    ".css": "text/css; charset=utf-8",
    ".gif": "image/gif",
    ".htm": "text/html; charset=utf-8",
    ".html": "text/html; charset=utf-8",
    ".jpeg": "image/jpeg",
    ".jpg": "image/jpeg",
    ".js": "text/javascript; charset=utf-8",
    ".json": "application/json",
    ".mjs": "text/javascript; charset=utf-8",
    ".pdf": "application/pdf",
    ".png": "image/png",
    ".svg": "image/svg+xml",
    ".wasm": "application/wasm",
    ".webp": "image/webp",
    ".xml": "text/xml; charset=utf-8",
}

_HTML_TAGS = (
    b"<!DOCTYPE HTML", b"<HTML", b"<HEAD", b"<SCRIPT", b"<IFRAME", b"<H1", b"<DIV", b"<FONT", b"<TABLE",
    b"<A", b"<STYLE", b"<TITLE", b"<B", b"<BODY", b"<BR", b"<P", b"<!--",
)  # fmt: skip
_PREFIXES = (
    (b"%PDF-", "application/pdf"),
    (b"%!PS-Adobe-", "application/postscript"),
    (b"\xfe\xff", "text/plain; charset=utf-16be"),
    (b"\xff\xfe", "text/plain; charset=utf-16le"),
    (b"\xef\xbb\xbf", _TEXT),
    (b"\x00\x00\x01\x00", "image/x-icon"),
    (b"\x00\x00\x02\x00", "image/x-icon"),
    (b"BM", "image/bmp"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"OggS\x00", "application/ogg"),
    (b"\x1a\x45\xdf\xa3", "video/webm"),
    (b"\x00\x01\x00\x00", "font/ttf"),
    (b"OTTO", "font/otf"),
    (b"ttcf", "font/collection"),
    (b"wOFF", "font/woff"),
    (b"wOF2", "font/woff2"),
    (b"\x1f\x8b\x08", "application/x-gzip"),
    (b"PK\x03\x04", "application/zip"),
    (b"Rar!\x1a\x07\x00", "application/x-rar-compressed"),
    (b"Rar!\x1a\x07\x01\x00", "application/x-rar-compressed"),
    (b"\x00asm", "application/wasm"),
)
_RIFF = ((b"WEBPVP", "image/webp"), (b"AVI ", "video/avi"), (b"WAVE", "audio/wave"))
_WHITESPACE = b"\t\n\x0c\r "
_BINARY = frozenset([*range(0x09), 0x0B, *range(0x0E, 0x1B), *range(0x1C, 0x20)])


def content_type(name: str, head: bytes) -> str:
    """The type of the file ``name`` whose content starts with ``head``."""
    extension = posixpath.splitext(name)[1]
    by_extension = _BY_EXTENSION.get(extension) or _BY_EXTENSION.get(extension.lower())
    return by_extension or detect(head)


def detect(data: bytes) -> str:
    """``http.DetectContentType`` for the signatures above."""
    data = data[:SNIFF_LEN]
    stripped = data.lstrip(_WHITESPACE)
    if _is_html(stripped):
        return "text/html; charset=utf-8"
    if stripped.startswith(b"<?xml"):
        return "text/xml; charset=utf-8"
    for prefix, kind in _PREFIXES:
        if data.startswith(prefix):
            return kind
    if data.startswith(b"RIFF") and len(data) >= 12:
        for form, kind in _RIFF:
            if data[8:].startswith(form):
                return kind
    if not _BINARY.intersection(stripped):
        return _TEXT
    return OCTET_STREAM


def _is_html(data: bytes) -> bool:
    # The tag, in any case, then a tag-terminating byte.
    for tag in _HTML_TAGS:
        if len(data) > len(tag) and data[: len(tag)].upper() == tag and data[len(tag)] in b" >":
            return True
    return False
