"""``virtctl vmexport download``: create the export if a source was given, wait until it is ready, then
fetch the volume (or the VM's manifests), as KubeVirt's virtctl does.

An answer other than 200 from the export server is tried again ``--retry`` times, 2 s apart; each try
goes through every step again. An export this run created is deleted after each try unless
``--keep-vme`` (one that existed already is kept unless ``--delete-vme``); manifests never delete it.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import BinaryIO

from kubevirt.client import ApiError, KubeApi
from kubevirt.virtctl.vmexport.exports import create_export, delete_export, get_export, wait_until_ready
from kubevirt.virtctl.vmexport.flags import VMExportError, VMExportInfo
from kubevirt.virtctl.vmexport.portforward import Dialer, setup_port_forward
from kubevirt.virtctl.vmexport.printer import Printer
from kubevirt.virtctl.vmexport.transfer import BarFactory, download_volume, print_manifests, stderr_bar

RETRY_PAUSE = 2.0
RETRIES_EXHAUSTED = "retry count reached, exiting unsuccesfully"


def pause(seconds: float) -> None:
    time.sleep(seconds)


def should_delete(info: VMExportInfo) -> bool:
    """Whether the export goes once the download is over."""
    return not info.export_manifest and (info.delete_vme or (info.should_create and not info.keep_vme))


def already_exists(message: str) -> bool:
    return "VirtualMachineExport" in message and "already exists" in message


@dataclass
class Downloader:
    api: KubeApi
    info: VMExportInfo
    printer: Printer
    out: BinaryIO
    dialer: Dialer
    new_bar: BarFactory = stderr_bar
    sleep: Callable[[float], None] = field(default=lambda seconds: pause(seconds))

    def run(self) -> None:
        for attempt in range(self.info.retries + 1):
            if self.attempt():
                return
            if attempt < self.info.retries:
                self.printer.say("Retrying...\n")
                self.sleep(RETRY_PAUSE)
        raise VMExportError(RETRIES_EXHAUSTED)

    def attempt(self) -> bool:
        """One try; False when the export server answered other than 200."""
        info = self.info
        if info.should_create:
            self._create()
        with contextlib.ExitStack() as cleanup:
            if should_delete(info):
                cleanup.callback(self._delete_quietly)
            if info.port_forward:
                forwarder = setup_port_forward(self.api, info, self.printer, self.dialer, sleep=self.sleep)
                cleanup.callback(forwarder.stop)
            wait_until_ready(self.api, info, self.printer, sleep=self.sleep)
            export = get_export(self.api, info)
            if export is None:
                raise VMExportError(f"unable to get '{info.namespace}/{info.name}' VirtualMachineExport")
            if info.export_manifest:
                return print_manifests(self.api, export, info, self.out, self.printer)
            return download_volume(self.api, export, info, self.out, self.printer, self.new_bar)

    def _create(self) -> None:
        try:
            create_export(self.api, self.info, self.printer)
        except (VMExportError, ApiError) as err:
            message = err.message if isinstance(err, ApiError) else str(err)
            if not already_exists(message):
                raise
            self.info.keep_vme = True  # one that was there already stays, unless --delete-vme

    def _delete_quietly(self) -> None:
        with contextlib.suppress(ApiError):
            delete_export(self.api, self.info, self.printer)
