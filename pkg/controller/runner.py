"""A controller: worker threads taking keys from a queue and handing them to a reconciler."""

from __future__ import annotations

import threading

from kubevirt.client.errors import is_stale_write
from kubevirt.controller.queue import RateLimitingQueue
from kubevirt.controller.reconciler import Reconciler, RequeueAfter
from kubevirt.log import get_logger

__all__ = ["Controller"]

_log = get_logger()


class Controller:
    def __init__(self, name: str, queue: RateLimitingQueue, reconciler: Reconciler, workers: int = 1) -> None:
        if workers < 1:
            raise ValueError(f"workers: must be at least 1, not {workers}")
        self.name = name
        self.queue = queue
        self._reconciler = reconciler
        self._workers = workers

    def run(self, stop_event: threading.Event) -> None:
        """Runs the workers until ``stop_event`` is set; then shuts the queue down and waits for them."""
        threads = [
            threading.Thread(target=self._work, name=f"{self.name}-worker-{index}", daemon=True)
            for index in range(self._workers)
        ]
        for thread in threads:
            thread.start()
        _log.info("controller started", controller=self.name, workers=self._workers)
        stop_event.wait()
        self.queue.shut_down()
        for thread in threads:
            thread.join()
        _log.info("controller stopped", controller=self.name)

    def _work(self) -> None:
        while self.process_next():
            pass

    def process_next(self) -> bool:
        """Processes one key; False once the queue is shut down and drained."""
        key = self.queue.get()
        if key is None:
            return False
        try:
            self._reconciler.reconcile(key)
        except RequeueAfter as request:
            self.queue.forget(key)
            self.queue.add_after(key, request.seconds)
        except Exception as err:  # any failure is retried with backoff; the worker carries on
            # A write against an object that changed meanwhile is the normal race of a cache-driven
            # controller (KubeVirt logs it at a debug level too): not an error worth an operator's eye.
            report = _log.info if is_stale_write(err) else _log.error
            report(
                "reconcile failed, retrying",
                controller=self.name,
                key=key,
                reason=str(err),
                error=type(err).__name__,
                retries=self.queue.num_requeues(key),
            )
            self.queue.add_rate_limited(key)
        else:
            self.queue.forget(key)
        finally:
            self.queue.done(key)
        return True
