"""The upload proxy's URL: the scheme check that decides on an ``https://`` prefix, and the upload paths.

Go's ``url.Parse`` finds a scheme in any leading ``[A-Za-z][A-Za-z0-9+.-]*:``, so ``host:8443`` reads
as scheme ``host`` (and is not prefixed) while ``10.0.0.1:8443`` is refused; both are kept here. The
paths are joined with Go's ``path.Join`` unless the URL already holds them anywhere.
"""

from __future__ import annotations

import posixpath
from urllib.parse import urlsplit, urlunsplit

from kubevirt.virtctl.imageupload.flags import UploadError
from kubevirt_api.cdi.constants import Upload

UPLOAD_PATH = Upload.PATH_SYNC  # "/v1beta1/upload"
UPLOAD_PATH_ASYNC = Upload.PATH_ASYNC  # "/v1beta1/upload-async"
HTTPS = "https://"
_SCHEME_TAIL = frozenset("0123456789+-.")


def _parse_error(raw: str, why: str) -> UploadError:
    return UploadError(f'parse "{raw}": {why}')


def go_scheme(raw: str) -> str:
    """The scheme ``url.Parse`` would find (``""`` for none); its refusals as Go words them."""
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in raw):
        raise _parse_error(raw, "net/url: invalid control character in URL")
    scheme = ""
    for index, char in enumerate(raw):
        if char.isascii() and char.isalpha():
            continue
        if char in _SCHEME_TAIL:
            if index == 0:
                break
            continue
        if char == ":":
            if index == 0:
                raise _parse_error(raw, "missing protocol scheme")
            scheme = raw[:index]
        break
    rest = raw[len(scheme) + 1 :] if scheme else raw
    if not scheme and not rest.startswith("/") and ":" in rest.split("/", 1)[0]:
        raise _parse_error(raw, "first path segment in URL cannot contain colon")
    return scheme.lower()


def with_scheme(raw: str) -> str:
    """``https://`` in front of a URL without a scheme."""
    return raw if go_scheme(raw) else HTTPS + raw


def go_path_join(*elements: str) -> str:
    """Go's ``path.Join``: the non-empty elements joined by ``/`` and cleaned."""
    joined = "/".join(element for element in elements if element)
    if not joined:
        return ""
    cleaned = posixpath.normpath(joined)
    # POSIX keeps a leading "//"; Go's Clean does not.
    return "/" + cleaned.lstrip("/") if cleaned.startswith("//") else cleaned


def _with_path(raw: str, uri: str) -> str:
    go_scheme(raw)
    if uri in raw:
        return raw
    try:
        parts = urlsplit(raw)
    except ValueError as err:
        raise _parse_error(raw, str(err)) from None
    return urlunsplit(parts._replace(path=go_path_join(parts.path, uri)))


def upload_url(raw: str) -> str:
    """The synchronous upload URL (``.../v1beta1/upload``)."""
    return _with_path(raw, UPLOAD_PATH)


def async_upload_url(raw: str) -> str:
    """The asynchronous upload URL (``.../v1beta1/upload-async``), used when the proxy answers it."""
    return _with_path(raw, UPLOAD_PATH_ASYNC)
