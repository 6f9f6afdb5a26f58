"""The HTTP side of an upload: which endpoint the proxy offers, then the POST of the file with the
upload token, tried ``--retry`` times, with the progress line on stdout.

The client is Go's plain ``http.Client`` as KubeVirt's virtctl uses it: the system's trust roots and
the proxy from the environment (never for loopback), or, with ``--insecure``, no verification and no
proxy at all (a bare transport). The asynchronous endpoint is used when a ``HEAD`` on it answers 200.
"""

from __future__ import annotations

import ipaddress
import os
import random
import ssl
import urllib.request
import warnings
from collections.abc import Callable, Iterator
from typing import BinaryIO
from urllib.parse import urlsplit

import urllib3

from kubevirt.virtctl.imageupload.flags import UploadError
from kubevirt.virtctl.imageupload.progress import UploadBar
from kubevirt.virtctl.imageupload.urls import async_upload_url, upload_url
from kubevirt.virtctl.vmexport.printer import Printer
from kubevirt.virtctl.vmexport.transfer import (
    CHUNK_SIZE,
    CONNECT_TIMEOUT,
    MAX_REDIRECTS,
    OK,
    failure_reason,
    tls_context,
)

AUTHORIZATION = "Authorization"
OCTET_STREAM = "application/octet-stream"
RETRY_JITTER_MS = 50  # the n-th retry waits n times [0, 50) ms

BarFactory = Callable[[int], UploadBar]
Sleep = Callable[[float], None]


def env_proxy(url: str) -> str | None:
    """The proxy Go's ``ProxyFromEnvironment`` picks for ``url``: none for loopback or ``NO_PROXY``."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if host == "localhost" or _is_loopback(host):
        return None
    proxies = urllib.request.getproxies_environment()
    proxy = proxies.get(parts.scheme)
    if not proxy or urllib.request.proxy_bypass(host):  # NO_PROXY, on POSIX
        return None
    return proxy if "://" in proxy else "http://" + proxy


def _is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def http_pool(url: str, insecure: bool) -> urllib3.PoolManager:
    context = tls_context("", insecure)
    if not insecure:
        context.load_default_certs()  # Go's http.Client trusts the system's roots
    options = {
        "ssl_context": context,
        "cert_reqs": ssl.CERT_NONE if insecure else ssl.CERT_REQUIRED,
        "assert_hostname": False if insecure else None,
    }
    proxy = None if insecure else env_proxy(url)
    if proxy:
        return urllib3.ProxyManager(proxy, **options)  # type: ignore[arg-type]
    return urllib3.PoolManager(**options)  # type: ignore[arg-type]


def _request(
    method: str, url: str, headers: dict[str, str], insecure: bool, body: Iterator[bytes] | None = None
) -> urllib3.BaseHTTPResponse:
    """One request; failures worded as Go's client words them (``Post "<url>": <why>``)."""
    scheme = urlsplit(url).scheme
    verb = method.capitalize()
    if scheme not in ("http", "https"):
        raise UploadError(f'{verb} "{url}": unsupported protocol scheme "{scheme}"')
    redirects = MAX_REDIRECTS if body is None else False  # a streamed body cannot be sent twice
    retries = urllib3.Retry(connect=0, read=0, status=0, other=0, redirect=redirects)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", urllib3.exceptions.InsecureRequestWarning)
            return http_pool(url, insecure).request(
                method,
                url,
                headers=headers,
                body=body,
                retries=retries,
                timeout=urllib3.Timeout(connect=CONNECT_TIMEOUT, read=None),
            )
    except urllib3.exceptions.HTTPError as err:
        raise UploadError(f'{verb} "{url}": {failure_reason(err)}') from None


def choose_upload_url(proxy_url: str, token: str, insecure: bool) -> str:
    """The asynchronous endpoint when the proxy answers a HEAD on it with 200, else the synchronous one."""
    url = async_upload_url(proxy_url)
    try:
        response = _request("HEAD", url, {AUTHORIZATION: f"Bearer {token}"}, insecure)
    except UploadError:
        return upload_url(proxy_url)
    return url if response.status == OK else upload_url(proxy_url)


def _chunks(file: BinaryIO, bar: UploadBar) -> Iterator[bytes]:
    file.seek(0)
    while chunk := file.read(CHUNK_SIZE):
        bar.add(len(chunk))
        yield chunk


def post_file(url: str, token: str, file: BinaryIO, size: int, bar: UploadBar, insecure: bool) -> None:
    """One try; a status other than 200 fails with the server's answer."""
    headers = {
        AUTHORIZATION: f"Bearer {token}",
        "Content-Type": OCTET_STREAM,
        "Content-Length": str(size),
    }
    response = _request("POST", url, headers, insecure, _chunks(file, bar))
    if response.status != OK:
        body = response.data.decode(errors="replace")
        raise UploadError(f"unexpected return value {response.status}, {body}")


def upload_file(
    proxy_url: str,
    token: str,
    file: BinaryIO,
    *,
    insecure: bool,
    retries: int,
    printer: Printer,
    new_bar: BarFactory,
    sleep: Sleep,
) -> None:
    """Sends the file up to ``retries`` times (no try at all with zero, as in KubeVirt)."""
    url = choose_upload_url(proxy_url, token, insecure)
    size = os.fstat(file.fileno()).st_size  # Go's Stat().Size()
    bar = new_bar(size)
    printer.say("\n")
    bar.start()
    failure: UploadError | None = None
    for attempt in range(1, retries + 1):
        try:
            post_file(url, token, file, size, bar, insecure)
        except UploadError as err:
            failure = err
            if attempt < retries:
                bar.set_current(0)
                sleep(attempt * random.randrange(RETRY_JITTER_MS) / 1000)
            continue
        failure = None
        break
    bar.finish()
    printer.say("\n")
    if failure is not None:
        raise UploadError(f"error uploading image after {retries} retries: {failure}")
