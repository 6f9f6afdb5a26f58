"""The KubeVirt CR's configuration as virt-handler follows it, with callbacks for whoever reacts to it."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from kubevirt.client import KUBEVIRTS
from kubevirt.controller import SharedInformerFactory
from kubevirt.virt_config import ClusterConfig
from kubevirt.virt_config.follower import ConfigFollower


class HandlerConfig:
    """The configuration in force (KubeVirt's defaults until a KubeVirt CR is seen)."""

    def __init__(self, factory: SharedInformerFactory, *, namespace: str | None = None) -> None:
        self._lock = threading.Lock()
        self._config = ClusterConfig()
        self._listeners: list[Callable[[], None]] = []
        self._follower = ConfigFollower(None, namespace, current=self.current, publish=self._publish)
        informer = factory.informer(KUBEVIRTS, namespace=namespace)
        informer.add_event_handler(self.observe, lambda _old, new: self.observe(new), lambda _gone: None)

    def current(self) -> ClusterConfig:
        with self._lock:
            return self._config

    def resource_version(self) -> str:
        """The resourceVersion of the KubeVirt CR whose configuration is in force ("" before one)."""
        return self._follower.resource_version

    def on_change(self, listener: Callable[[], None]) -> None:
        self._listeners.append(listener)

    def observe(self, kubevirt: dict[str, Any]) -> None:
        """Take a KubeVirt CR the informer delivered (the last valid configuration stays otherwise)."""
        self._follower.observe(kubevirt)

    def _publish(self, config: ClusterConfig) -> None:
        with self._lock:
            self._config = config
        for listener in self._listeners:
            listener()
