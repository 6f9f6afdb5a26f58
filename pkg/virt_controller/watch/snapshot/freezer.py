"""Freezing a guest's filesystems for a snapshot, through virt-api's ``freeze``/``unfreeze`` subresources
(virt-handler asks the guest agent). Only guests with a connected agent are frozen."""

from __future__ import annotations

from typing import Protocol

from kubevirt.service.durations import SECOND, format_go_duration
from kubevirt.virt_controller.watch.volumerequests import Requester, put_vmi_subresource


class Freezer(Protocol):
    def freeze(self, namespace: str, name: str, unfreeze_timeout_seconds: float) -> None: ...

    def unfreeze(self, namespace: str, name: str) -> None: ...


class SubresourceFreezer:
    def __init__(self, client: Requester) -> None:
        self._client = client

    def freeze(self, namespace: str, name: str, unfreeze_timeout_seconds: float) -> None:
        # Whole seconds (a fraction is dropped), written as Go writes a duration.
        body = {"unfreezeTimeout": format_go_duration(int(unfreeze_timeout_seconds) * SECOND)}
        put_vmi_subresource(self._client, namespace, name, "freeze", body)

    def unfreeze(self, namespace: str, name: str) -> None:
        put_vmi_subresource(self._client, namespace, name, "unfreeze", {})
