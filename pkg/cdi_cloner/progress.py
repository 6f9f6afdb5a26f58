"""The clone's progress (``kubevirt_cdi_clone_progress_total``): the share of the source's expected bytes
read, 100 at the end of the stream."""

from __future__ import annotations

from typing import Final

from prometheus_client import CollectorRegistry

from kubevirt.cdi import progress as shared
from kubevirt.cdi.progress import Readable
from kubevirt_api.cdi.constants import CLONE_PROGRESS_METRIC

__all__ = ["CountingReader", "Progress", "Readable", "serve"]
CERT_NAME: Final = "cloner_target"  # the common name of CDI's cloner metrics certificate


class Progress(shared.Progress):
    """The progress counter of one clone."""

    def __init__(self, owner_uid: str, registry: CollectorRegistry | None = None) -> None:
        super().__init__(CLONE_PROGRESS_METRIC, "The clone progress in percentage", owner_uid, registry)


class CountingReader(shared.CountingReader):
    """The source read through; its size is an estimate, so the end of the stream is 100%."""

    def __init__(self, stream: Readable, total: int, progress: shared.Progress) -> None:
        super().__init__(stream, total, progress, done_at_end=True)


def serve(progress: shared.Progress, port: int, *, address: str = "0.0.0.0") -> None:
    shared.serve(progress, port, cert_name=CERT_NAME, address=address)
