"""What the VM controller tells the notify side: a launcher was found, a domain was read, a VMI is gone.

It gives the launcher its notify pipe, resyncs the domain cache from GetDomain, and drops both when the
VMI goes. A pipe that cannot be made is logged: the VMI is still reconciled, by polling.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, Protocol

from kubevirt.log import get_logger
from kubevirt.virt_handler.domain_cache import DomainCache
from kubevirt.virt_handler.notify_pipes import NotifyPipeError


class Pipes(Protocol):
    def ensure(self, uid: str, launcher_socket: Path) -> None: ...
    def stop(self, uid: str) -> None: ...


class DomainNotify:
    def __init__(self, cache: DomainCache, pipes: Pipes) -> None:
        self.cache = cache
        self._pipes = pipes
        self._lock = threading.Lock()
        self._uids: dict[str, str] = {}  # VMI key -> UID, for the pipe to stop when the VMI is gone
        self._log = get_logger()

    def launcher_found(self, key: str, uid: str, launcher_socket: Path) -> None:
        with self._lock:
            previous = self._uids.get(key)
            self._uids[key] = uid
        if previous is not None and previous != uid:
            self._pipes.stop(previous)  # the VMI was deleted and created again under the same name
        try:
            self._pipes.ensure(uid, launcher_socket)
        except NotifyPipeError as err:
            self._log.warning("no notify pipe for the launcher", key=key, reason=str(err))

    def domain_read(self, key: str, domain: dict[str, Any] | None) -> None:
        self.cache.resync(key, domain)

    def forget(self, key: str) -> None:
        with self._lock:
            uid = self._uids.pop(key, None)
        if uid is not None:
            self._pipes.stop(uid)
        self.cache.forget(key)
