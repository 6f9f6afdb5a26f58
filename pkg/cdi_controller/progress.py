"""An importer's progress, read from its Prometheus endpoint as CDI reads it: HTTPS on the container port
named ``metrics`` at the pod's IP, any certificate (the worker's is self-signed), a 2 s timeout."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

import urllib3

from kubevirt_api.cdi import constants as cdi

# A GET of a URL to its body; an unreachable worker (refused, gone) answers None.
Fetch = Callable[[str], str | None]
TIMEOUT_SECONDS = 2.0


def metrics_url(pod: Mapping[str, Any]) -> str | None:
    ip = (pod.get("status") or {}).get("podIP")
    if not ip:
        return None
    for container in (pod.get("spec") or {}).get("containers") or ():
        for port in container.get("ports") or ():
            if port.get("name") == cdi.METRICS_PORT_NAME:
                host = f"[{ip}]" if ":" in ip else ip
                return f"https://{host}:{port.get('containerPort')}/metrics"
    return None


def parse_progress(body: str, owner_uid: str) -> str | None:
    """The progress figure for ``owner_uid`` in a Prometheus text page, e.g. ``"45.67"``."""
    metrics = f"{cdi.IMPORT_PROGRESS_METRIC}|{cdi.CLONE_PROGRESS_METRIC}"
    pattern = rf'({metrics})\{{{cdi.PROGRESS_OWNER_LABEL}="{re.escape(owner_uid)}"\}} (\d{{1,3}}\.?\d*)'
    match = re.search(pattern, body)
    return match.group(2) if match else None


def format_progress(figure: str) -> str | None:
    """CDI's ``status.progress`` text (``"%.2f%%"``) for a figure; None when it is no number."""
    try:
        return f"{float(figure):.2f}%"
    except ValueError:
        return None


class MetricsFetcher:
    """GETs worker metrics pages; one pool for every worker, certificates not checked."""

    def __init__(self) -> None:
        self._pool = urllib3.PoolManager(cert_reqs="CERT_NONE", retries=False, timeout=TIMEOUT_SECONDS)
        # Unverified on purpose (as CDI's client): a warning per poll would only flood the log.
        urllib3.disable_warnings(urllib3.exceptions.InsecureRequestWarning)

    def __call__(self, url: str) -> str | None:
        try:
            response = self._pool.request("GET", url, preload_content=True)
        except urllib3.exceptions.HTTPError:
            return None
        if response.status != 200:
            return None
        return response.data.decode("utf-8", "replace")
