"""The HTTP side of a download: one GET to the export server per file, with the export's token.

TLS as KubeVirt's virtctl sets it up: the server is checked against the CA of the side of links in use
(and only that CA), or not at all with ``--insecure`` (and behind a port-forward). No proxy from the
environment is used, as Go's bare transport uses none. The body streams to the output with the progress
line on stderr; ``--format raw`` gunzips it on the way (every gzip member, as Go's reader does).
"""

from __future__ import annotations

import contextlib
import shutil
import ssl
import sys
import warnings
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import BinaryIO
from urllib.parse import urlsplit

import click
import urllib3

from kubevirt.client import JSON, KubeReader
from kubevirt.export.token import TOKEN_HEADER
from kubevirt.virtctl.vmexport.exports import export_token
from kubevirt.virtctl.vmexport.flags import OUTPUT_FORMAT_JSON, VMExportError, VMExportInfo
from kubevirt.virtctl.vmexport.links import link_cert, manifest_urls, volume_url
from kubevirt.virtctl.vmexport.printer import Printer
from kubevirt.virtctl.vmexport.progress import ProgressBar
from kubevirt_api.export.v1beta1.types import MANIFEST_ALL, MANIFEST_AUTH_HEADER

ACCEPT = "Accept"
APPLICATION_YAML = "application/yaml"
APPLICATION_JSON = "application/json"
CHUNK_SIZE = 64 * 1024
CONNECT_TIMEOUT = 30.0
MAX_REDIRECTS = 10  # Go's http.Client follows up to ten
OK = 200
GZIP_WBITS = 16 + zlib.MAX_WBITS

BarFactory = Callable[[], ProgressBar]


def stderr_bar() -> ProgressBar:
    width = shutil.get_terminal_size((100, 24)).columns
    return ProgressBar(
        lambda text: click.echo(text, nl=False, err=True), terminal=sys.stderr.isatty(), width=width
    )


def tls_context(ca_pem: str, insecure: bool) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    if insecure:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        return context
    if ca_pem.strip():
        # As Go's AppendCertsFromPEM: what does not parse is skipped, and nothing else is trusted instead.
        with contextlib.suppress(ssl.SSLError):
            context.load_verify_locations(cadata=ca_pem)
    return context


def http_get(
    url: str, headers: Mapping[str, str], *, ca_pem: str, insecure: bool
) -> urllib3.BaseHTTPResponse:
    """The response, its body not read yet; the caller releases it. Failures are worded as Go's client
    words them (``Get "<url>": <why>``)."""
    try:
        scheme = urlsplit(url).scheme
    except ValueError as err:
        raise VMExportError(f'parse "{url}": {err}') from None
    if scheme not in ("http", "https"):
        raise VMExportError(f'Get "{url}": unsupported protocol scheme "{scheme}"')
    pool = urllib3.PoolManager(
        ssl_context=tls_context(ca_pem, insecure),
        cert_reqs=ssl.CERT_NONE if insecure else ssl.CERT_REQUIRED,
        assert_hostname=False if insecure else None,
    )
    retries = urllib3.Retry(connect=0, read=0, status=0, other=0, redirect=MAX_REDIRECTS)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", urllib3.exceptions.InsecureRequestWarning)
            return pool.request(
                "GET",
                url,
                headers=dict(headers),
                preload_content=False,
                retries=retries,
                timeout=urllib3.Timeout(connect=CONNECT_TIMEOUT, read=None),
            )
    except urllib3.exceptions.HTTPError as err:
        raise VMExportError(f'Get "{url}": {failure_reason(err)}') from None


def failure_reason(err: BaseException) -> str:
    """The failure under urllib3's wrappers, closer to Go's wording (``connection reset by peer``)."""
    if isinstance(err, urllib3.exceptions.MaxRetryError) and err.reason is not None:
        err = err.reason
    if isinstance(err, urllib3.exceptions.ProtocolError) and isinstance(err.args[-1], BaseException):
        err = err.args[-1]
    if isinstance(err, OSError) and not isinstance(err, ssl.SSLError) and err.strerror:
        return err.strerror.lower()
    return str(err)


def export_get(
    api: KubeReader, export: JSON, url: str, info: VMExportInfo, headers: Mapping[str, str]
) -> urllib3.BaseHTTPResponse:
    """A GET to the export server with the export's token (read afresh for every request)."""
    token = export_token(api, export)
    sent = {**headers, TOKEN_HEADER: token}
    return http_get(url, sent, ca_pem=link_cert(export, info), insecure=info.insecure)


def _bad_status(response: urllib3.BaseHTTPResponse, printer: Printer) -> bool:
    if response.status == OK:
        return False
    printer.say(f"Bad status: {response.status} {response.reason or ''}\n")
    return True


def print_body(
    api: KubeReader,
    export: JSON,
    url: str,
    info: VMExportInfo,
    headers: Mapping[str, str],
    out: BinaryIO,
    printer: Printer,
) -> bool:
    response = export_get(api, export, url, info, headers)
    try:
        if _bad_status(response, printer):
            return False
        out.write(response.read())
    finally:
        response.close()
    return True


def print_manifests(
    api: KubeReader, export: JSON, info: VMExportInfo, out: BinaryIO, printer: Printer
) -> bool:
    """The VM's manifests (and with ``--include-secret`` the CDI header secret) into ``out``."""
    urls = manifest_urls(export, info)
    accept = APPLICATION_JSON if info.output_format.lower() == OUTPUT_FORMAT_JSON else APPLICATION_YAML
    headers = {ACCEPT: accept}
    if not print_body(api, export, urls.get(MANIFEST_ALL, ""), info, headers, out, printer):
        return False
    if info.include_secret:
        return print_body(api, export, urls.get(MANIFEST_AUTH_HEADER, ""), info, headers, out, printer)
    return True


def download_volume(
    api: KubeReader, export: JSON, info: VMExportInfo, out: BinaryIO, printer: Printer, new_bar: BarFactory
) -> bool:
    """The volume into ``out``; False when the server answered other than 200 (worth a retry)."""
    url, info.decompress = volume_url(export, info)
    response = export_get(api, export, url, info, {})
    try:
        if _bad_status(response, printer):
            return False
        bar = new_bar()
        bar.start()
        try:
            chunks: Iterable[bytes] = _counted(_body(response), bar)
            if info.decompress:
                chunks = gunzip(chunks, lambda: printer.say("Decompressing image:\n"))
            for chunk in chunks:
                out.write(chunk)
        finally:
            bar.finish()
    finally:
        response.close()
    printer.say("Download finished succesfully\n")
    return True


def _body(response: urllib3.BaseHTTPResponse) -> Iterator[bytes]:
    try:
        yield from response.stream(CHUNK_SIZE)
    except urllib3.exceptions.HTTPError as err:
        raise VMExportError(str(err)) from None


def _counted(chunks: Iterable[bytes], bar: ProgressBar) -> Iterator[bytes]:
    for chunk in chunks:
        bar.add(len(chunk))
        yield chunk


def gunzip(chunks: Iterable[bytes], on_header: Callable[[], None]) -> Iterator[bytes]:
    """The decompressed stream of one or more gzip members; ``on_header`` once the first header is read.
    Errors are worded as Go's ``compress/gzip`` words them."""
    member: zlib._Decompress | None = None
    announced = False
    for chunk in chunks:
        data = chunk
        while data:
            member = member or zlib.decompressobj(GZIP_WBITS)
            try:
                decompressed = member.decompress(data)
            except zlib.error as err:
                raise VMExportError(_gzip_error(err)) from None
            if not announced:
                on_header()
                announced = True
            yield decompressed
            data, member = (member.unused_data, None) if member.eof else (b"", member)
    if not announced:
        raise VMExportError("EOF")
    if member is not None:
        raise VMExportError("unexpected EOF")


def _gzip_error(err: zlib.error) -> str:
    text = str(err)
    if "header check" in text or "compression method" in text:
        return "gzip: invalid header"
    if "data check" in text or "length check" in text:
        return "gzip: invalid checksum"
    return "flate: corrupt input"
