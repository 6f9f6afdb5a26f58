"""The KubeVirt CR's configuration as virt-controller follows it, through the shared KubeVirt informer."""

from __future__ import annotations

import threading
from typing import Any

from kubevirt.client import KUBEVIRTS
from kubevirt.controller import SharedInformerFactory
from kubevirt.virt_config import ClusterConfig
from kubevirt.virt_config.follower import ConfigFollower
from kubevirt.virt_controller.services import LauncherSettings


class ClusterConfigSource:
    """The configuration of the install namespace's KubeVirt CR (the flags' until one exists), and the
    launcher settings it gives the template service."""

    def __init__(
        self, factory: SharedInformerFactory, *, namespace: str | None, initial: ClusterConfig
    ) -> None:
        self._lock = threading.Lock()
        self._config = initial
        self._settings = LauncherSettings()
        self._follower = ConfigFollower(None, namespace, current=self.cluster_config, publish=self._publish)
        informer = factory.informer(KUBEVIRTS, namespace=namespace)
        informer.add_event_handler(self._observe, lambda _old, new: self._observe(new), lambda _gone: None)

    def _observe(self, kubevirt: dict[str, Any]) -> None:
        settings = LauncherSettings.from_kubevirt(kubevirt)
        with self._lock:
            self._settings = settings
        self._follower.observe(kubevirt)

    def _publish(self, config: ClusterConfig) -> None:
        with self._lock:
            self._config = config

    def cluster_config(self) -> ClusterConfig:
        with self._lock:
            return self._config

    def resource_version(self) -> str:
        """The resourceVersion of the KubeVirt CR whose configuration is in force ("" before one)."""
        return self._follower.resource_version

    def launcher_settings(self) -> LauncherSettings:
        with self._lock:
            return self._settings
