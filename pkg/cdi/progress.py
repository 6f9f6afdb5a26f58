"""A worker pod's progress as CDI's controller reads it: one counter (``kubevirt_cdi_import_progress_total``
or ``kubevirt_cdi_clone_progress_total``), a 0-100 percentage labelled with the owner's UID, served from
``/metrics`` over HTTPS with a self-signed certificate (the controller scrapes without verifying)."""

from __future__ import annotations

import datetime
import tempfile
import threading
from pathlib import Path
from typing import Final, Protocol

import prometheus_client
from prometheus_client import CollectorRegistry, Counter

from kubevirt.service.certs import new_ca
from kubevirt_api.cdi.constants import PROGRESS_OWNER_LABEL

_CERT_LIFE: Final = datetime.timedelta(days=365)


class Readable(Protocol):
    def read(self, size: int = -1, /) -> bytes: ...


class Progress:
    """The progress counter of one transfer; it only ever goes up, to 100 at most."""

    def __init__(
        self, metric: str, description: str, owner_uid: str, registry: CollectorRegistry | None = None
    ) -> None:
        self.registry = registry or CollectorRegistry()
        counter = Counter(metric, description, [PROGRESS_OWNER_LABEL], registry=self.registry)
        self._child = counter.labels(owner_uid)
        self._value = 0.0
        self._lock = threading.Lock()

    @property
    def value(self) -> float:
        return self._value

    def advance(self, percent: float) -> None:
        """Raise the progress to ``percent`` (capped at 100); lower values are ignored, as CDI does
        when qemu-img's own percentage starts again from zero after the download."""
        percent = min(percent, 100.0)
        with self._lock:
            if percent > self._value:
                self._child.inc(percent - self._value)
                self._value = percent


class CountingReader:
    """A stream whose bytes read drive the progress when its length is known; with ``done_at_end`` the
    end of the stream is 100% (the size was an estimate)."""

    def __init__(
        self, stream: Readable, total: int, progress: Progress, *, done_at_end: bool = False
    ) -> None:
        self._stream = stream
        self._total = total
        self._progress = progress
        self._done_at_end = done_at_end
        self.count = 0

    def read(self, size: int = -1, /) -> bytes:
        data = self._stream.read(size)
        self.count += len(data)
        if self._total > 0:
            ended = self._done_at_end and not data and size != 0
            self._progress.advance(100.0 if ended else self.count * 100 / self._total)
        return data


def serve(progress: Progress, port: int, *, cert_name: str, address: str = "0.0.0.0") -> None:
    """Serve the metrics on ``port`` over HTTPS with a certificate made now, in a daemon thread."""
    prometheus_client.disable_created_metrics()  # type: ignore[no-untyped-call]  # only the counter itself, as CDI's Go client shows
    pair = new_ca(cert_name, datetime.datetime.now(datetime.UTC), _CERT_LIFE)
    directory = Path(tempfile.mkdtemp(prefix="certsdir"))
    cert, key = directory / "tls.crt", directory / "tls.key"
    key.write_bytes(pair.key_pem)
    cert.write_bytes(pair.cert_pem)
    prometheus_client.start_http_server(
        port, addr=address, registry=progress.registry, certfile=str(cert), keyfile=str(key)
    )
