"""The reconciler contract a :class:`kubevirt.controller.Controller` drives."""

from __future__ import annotations

from typing import Protocol

__all__ = ["Reconciler", "RequeueAfter"]


class Reconciler(Protocol):
    def reconcile(self, key: str) -> None:
        """Brings the object under ``key`` towards its desired state, reading only from caches.

        Returning forgets the key's backoff; raising retries it with backoff; raising
        :class:`RequeueAfter` looks at it again after the given time without counting a failure.
        """
        ...


class RequeueAfter(Exception):  # noqa: N818 (the contract's name: a request, not an error)
    """Asks for the key to be processed again after ``seconds`` (e.g. to re-check a timeout)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        super().__init__(f"requeue after {seconds:g}s")
