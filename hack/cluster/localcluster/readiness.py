"""Waiting for the cluster's endpoints and objects."""

from __future__ import annotations

import json
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path


def _tls_context(pki: Path) -> ssl.SSLContext:
    # Health endpoints of the control plane may use self-signed serving certificates; the client
    # certificate is what makes /readyz answer fully.
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    context.load_cert_chain(pki / "admin.crt", pki / "admin.key")
    return context


def url_ok(url: str, pki: Path | None = None) -> bool:
    """Whether ``url`` answers 200 (over HTTPS with the admin client certificate from ``pki``)."""
    try:
        context = _tls_context(pki) if url.startswith("https") and pki is not None else None
        with urllib.request.urlopen(url, timeout=2, context=context) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError, ssl.SSLError):
        return False


def wait_for(what: str, check: Callable[[], bool], *, timeout: float, alive: Callable[[], bool]) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if not alive():
            raise RuntimeError(f"{what}: the process exited")
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what}: not ready after {timeout:.0f} s")
        time.sleep(0.1)


def kubectl_json(kubectl: list[str], *args: str) -> dict[str, object] | None:
    result = subprocess.run(
        [*kubectl, *args, "-o", "json"],
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        return None
    loaded = json.loads(result.stdout)
    return loaded if isinstance(loaded, dict) else None


def node_ready(kubectl: list[str], node: str) -> bool:
    obj = kubectl_json(kubectl, "get", "node", node)
    if obj is None:
        return False
    status = obj.get("status", {})
    assert isinstance(status, dict)
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions", []))


def default_service_account(kubectl: list[str]) -> bool:
    return kubectl_json(kubectl, "get", "serviceaccount", "default", "-n", "default") is not None
