"""The import's progress (``kubevirt_cdi_import_progress_total``), which CDI's controller scrapes into the
DataVolume's ``status.progress``."""

from __future__ import annotations

from typing import Final

from prometheus_client import CollectorRegistry

from kubevirt.cdi import progress as shared
from kubevirt.cdi.progress import CountingReader
from kubevirt_api.cdi.constants import IMPORT_PROGRESS_METRIC

__all__ = ["CountingReader", "Progress", "serve"]
CERT_NAME: Final = "cdi-importer"


class Progress(shared.Progress):
    """The progress counter of one import."""

    def __init__(self, owner_uid: str, registry: CollectorRegistry | None = None) -> None:
        super().__init__(IMPORT_PROGRESS_METRIC, "The import progress in percentage", owner_uid, registry)


def serve(progress: shared.Progress, port: int, *, address: str = "0.0.0.0") -> None:
    shared.serve(progress, port, cert_name=CERT_NAME, address=address)
