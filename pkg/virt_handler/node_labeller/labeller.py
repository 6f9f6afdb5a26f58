"""Keeping the node's labeller-owned labels equal to what its capabilities give.

One key (the node's name) in a rate-limited queue: queued at start, every 3 minutes (jittered) and
whenever the cluster configuration changes. A pass reads the Node, computes the labels, and writes them
only when they differ, as one JSON patch that first tests the labels it read (a concurrent writer makes
the patch fail and the pass retry). A Node annotated ``node-labeller.kubevirt.io/skip-node`` is left as is.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable, Iterable
from typing import Any

from kubevirt.client import NODES, EventSink, KubeApi
from kubevirt.controller import Controller, RateLimitingQueue
from kubevirt.log import get_logger
from kubevirt.virt_config import ClusterConfig
from kubevirt_api.core.v1 import constants as c

from .capabilities import HostCapabilities
from .labels import host_model_is_obsolete, node_labels, relabelled

PERIOD_SECONDS = 180.0
JITTER_FACTOR = 1.2
OBSOLETE_HOST_MODEL_REASON = "HostModelIsObsolete"


def labels_patch(original: dict[str, str] | None, wanted: dict[str, str]) -> list[dict[str, Any]]:
    """A JSON patch replacing the labels, guarded by a test of the ones that were read."""
    if original is None:
        # A test for null passes only while the node still has no labels: the heartbeat may add its own
        # between the read and this patch, and an unguarded "add" would replace them.
        return [
            {"op": "test", "path": "/metadata/labels", "value": None},
            {"op": "add", "path": "/metadata/labels", "value": wanted},
        ]
    return [
        {"op": "test", "path": "/metadata/labels", "value": original},
        {"op": "replace", "path": "/metadata/labels", "value": wanted},
    ]


class NodeLabeller:
    """Reconciles this node's labels (``reconcile(key)`` for the shared controller runner)."""

    def __init__(
        self,
        *,
        api: KubeApi,
        events: EventSink,
        node: str,
        capabilities: HostCapabilities,
        config: Callable[[], ClusterConfig],
        realtime: Callable[[], bool] = lambda: False,
        hyperv: Iterable[str] = (),
    ) -> None:
        self._api = api
        self._events = events
        self._node = node
        self._caps = capabilities
        self._config = config
        self._realtime = realtime
        self._hyperv = tuple(hyperv)
        self._log = get_logger()
        self.queue = RateLimitingQueue(name="virt-handler-node-labeller")

    @property
    def host_cpu_model(self) -> str:
        return self._caps.host_model.name if self._caps.host_model else ""

    @property
    def deprecated_machine_types(self) -> tuple[str, ...]:
        """The machine types this node's libvirt marks deprecated (virt-handler exposes them as a metric)."""
        return self._caps.deprecated_machines

    def wanted_labels(self) -> dict[str, str]:
        return node_labels(
            self._caps,
            obsolete=self._config().obsolete_cpu_models,
            realtime=self._realtime(),
            hyperv=self._hyperv,
        )

    def reconcile(self, key: str) -> None:
        node = self._api.get(NODES, None, key)
        metadata = node.get("metadata") or {}
        if c.LABELLER_SKIP_NODE_ANNOTATION in (metadata.get("annotations") or {}):
            return
        original = metadata.get("labels")
        obsolete = self._config().obsolete_cpu_models
        if host_model_is_obsolete(self._caps, obsolete):
            self._events.event(
                node,
                "Warning",
                OBSOLETE_HOST_MODEL_REASON,
                f"This node has {self.host_cpu_model} host-model cpu that is included in "
                f"ObsoleteCPUModels: {sorted(obsolete or ())}",
            )
        wanted = relabelled(original or {}, self.wanted_labels())
        if wanted == (original or {}):
            return
        self._api.patch(NODES, None, key, labels_patch(original, wanted), patch_type="json")
        self._log.info("node labels updated", node=key, labeller_labels=len(self.wanted_labels()))

    def config_changed(self) -> None:
        self.queue.add(self._node)

    def run(self, stop: threading.Event, rng: random.Random | None = None) -> None:
        """Label now, then every period (jittered) and on every :meth:`config_changed`, until ``stop``."""
        controller = Controller("virt-handler-node-labeller", self.queue, self, workers=1)
        runner = threading.Thread(target=controller.run, args=(stop,), name="node-labeller", daemon=True)
        runner.start()
        self._log.info("node-labeller is running", node=self._node, host_cpu_model=self.host_cpu_model)
        if self._caps.tsc is None:
            self._log.error("failed to get tsc cpu frequency, will continue without the tsc frequency label")
        jitter = rng or random.Random()
        while not stop.is_set():
            self.queue.add(self._node)
            stop.wait(PERIOD_SECONDS * (1 + jitter.random() * (JITTER_FACTOR - 1)))
        runner.join(timeout=10)
