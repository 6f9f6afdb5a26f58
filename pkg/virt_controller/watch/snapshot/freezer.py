"""Freezing a guest's filesystems for a snapshot, through virt-api's ``freeze``/``unfreeze`` subresources
(virt-handler asks the guest agent). Only guests with a connected agent are frozen."""

from __future__ import annotations

from typing import Protocol

from kubevirt.virt_controller.watch.volumerequests import Requester, put_vmi_subresource


class Freezer(Protocol):
    def freeze(self, namespace: str, name: str, unfreeze_timeout_seconds: float) -> None: ...

    def unfreeze(self, namespace: str, name: str) -> None: ...


class SubresourceFreezer:
    def __init__(self, client: Requester) -> None:
        self._client = client

    def freeze(self, namespace: str, name: str, unfreeze_timeout_seconds: float) -> None:
        body = {"unfreezeTimeout": go_duration(unfreeze_timeout_seconds)}
        put_vmi_subresource(self._client, namespace, name, "freeze", body)

    def unfreeze(self, namespace: str, name: str) -> None:
        put_vmi_subresource(self._client, namespace, name, "unfreeze", {})


def go_duration(seconds: float) -> str:
    """Whole seconds as Go prints a duration (``5m0s``, ``1h0m0s``, ``45s``)."""
    total = int(seconds)
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes}m{secs}s"
    if minutes:
        return f"{minutes}m{secs}s"
    return f"{secs}s"
