"""Objects of kinds this installation serves but does not act on get told so, never silence.

KubeVirt v1.6 runs a controller for exports; this project serves their CRD (so clients listing them
get an answer) but has no controller for them yet. A client waiting on such an object would otherwise
wait forever, so each one gets, once, a ``Ready=False`` condition with reason ``NotActedOn``.

(Snapshots, their contents and restores are acted on: see ``watch/snapshot``; clones: ``watch/clone``.
MigrationPolicies are acted on: the migration controller matches them at hand-off.)
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Final

from kubevirt.client import EventSink, KubeApi, Resource
from kubevirt.client.resources import VIRTUAL_MACHINE_EXPORTS
from kubevirt.controller import Store, key_of
from kubevirt.log import get_logger
from kubevirt.virt_controller.watch.common import Clock, Enqueue, format_time, utc_now
from kubevirt_api.view import JSON

NOT_ACTED_ON_REASON: Final = "NotActedOn"
CONDITION_TYPE: Final = "Ready"


@dataclass(frozen=True)
class Unhandled:
    """One kind this installation serves but does not act on."""

    resource: Resource


UNHANDLED_KINDS: Final[tuple[Unhandled, ...]] = (Unhandled(VIRTUAL_MACHINE_EXPORTS),)


def not_acted_on_message(kind: str) -> str:
    return f"this KubeVirt installation does not act on {kind} objects; nothing will be done with it"


class NotActedOnController:
    """Marks each object of one unhandled kind as not acted on. Informer: that kind (plain dicts)."""

    def __init__(
        self,
        *,
        api: KubeApi,
        events: EventSink,
        unhandled: Unhandled,
        store: Store[JSON],
        enqueue: Enqueue,
        clock: Clock = utc_now,
    ) -> None:
        self._api = api
        self._events = events
        self._resource = unhandled.resource
        self._store = store
        self._enqueue = enqueue
        self._clock = clock
        self._message = not_acted_on_message(unhandled.resource.kind)
        self._log = get_logger(controller="not-acted-on", kind=unhandled.resource.kind)

    def on_add(self, obj: JSON) -> None:
        self._enqueue(key_of(obj))

    def on_update(self, _old: JSON, new: JSON) -> None:
        self._enqueue(key_of(new))

    def on_delete(self, obj: JSON) -> None:
        """Nothing is kept per object."""

    def reconcile(self, key: str) -> None:
        obj = self._store.get_by_key(key)
        if obj is None or obj["metadata"].get("deletionTimestamp"):
            return
        status = obj.get("status") or {}
        conditions: list[JSON] = list(status.get("conditions") or [])
        if any(
            c.get("type") == CONDITION_TYPE and c.get("reason") == NOT_ACTED_ON_REASON for c in conditions
        ):
            return
        now = format_time(self._clock())
        condition = {
            "type": CONDITION_TYPE,
            "status": "False",
            "reason": NOT_ACTED_ON_REASON,
            "message": self._message,
            "lastProbeTime": None,
            "lastTransitionTime": now,
        }
        conditions = [c for c in conditions if c.get("type") != CONDITION_TYPE] + [condition]
        self._write_status(obj, {**status, "conditions": conditions})

    def _write_status(self, obj: JSON, status: JSON) -> None:
        # Guarded by the cached resourceVersion: a conflict raises and the queue retries with backoff.
        body = copy.deepcopy(obj)
        body["status"] = status
        self._api.update_status(self._resource, obj["metadata"].get("namespace"), body)
        self._log.info("marked as not acted on", name=key_of(obj))
