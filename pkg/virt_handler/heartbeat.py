"""The node heartbeat: virt-handler's labels and annotation on its own Node, renewed every minute."""

from __future__ import annotations

import random
import threading
from datetime import UTC, datetime
from typing import Any

from kubevirt.client import NODES, KubeApi
from kubevirt.client.errors import ApiError, ConnectionFailedError
from kubevirt.log import get_logger

SCHEDULABLE_LABEL = "kubevirt.io/schedulable"
CPU_MANAGER_LABEL = "cpumanager"
HEARTBEAT_ANNOTATION = "kubevirt.io/heartbeat"
PERIOD_SECONDS = 60.0
JITTER_FACTOR = 1.2


def heartbeat_patch(schedulable: bool, now: datetime) -> dict[str, Any]:
    return {
        "metadata": {
            "labels": {SCHEDULABLE_LABEL: str(schedulable).lower(), CPU_MANAGER_LABEL: "false"},
            "annotations": {HEARTBEAT_ANNOTATION: now.strftime("%Y-%m-%dT%H:%M:%SZ")},
        }
    }


class Heartbeat:
    def __init__(self, api: KubeApi, node: str, rng: random.Random | None = None) -> None:
        self._api = api
        self._node = node
        self._rng = rng or random.Random()
        self._log = get_logger()

    def beat(self, schedulable: bool = True) -> bool:
        patch = heartbeat_patch(schedulable, datetime.now(UTC))
        try:
            self._api.patch(NODES, None, self._node, patch, patch_type="strategic")
        except (ApiError, ConnectionFailedError) as err:
            self._log.error("cannot update the node heartbeat", node=self._node, reason=str(err))
            return False
        return True

    def run(self, stop: threading.Event) -> None:
        """Beat now and then every period (with jitter) until ``stop``; then mark the node unschedulable."""
        while True:
            self.beat()
            if stop.wait(PERIOD_SECONDS * (1 + self._rng.random() * (JITTER_FACTOR - 1))):
                break
        self.beat(schedulable=False)
