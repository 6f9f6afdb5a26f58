"""The KubeVirt CR's configuration as virt-controller follows it, through the shared KubeVirt informer."""

from __future__ import annotations

import threading
from typing import Any

from kubevirt.admission.config import ClusterConfig
from kubevirt.client import KUBEVIRTS
from kubevirt.controller import SharedInformerFactory
from kubevirt.log import get_logger
from kubevirt.virt_controller.services import LauncherSettings

JSON = dict[str, Any]


class ClusterConfigFollower:
    """Holds the configuration of the install namespace's KubeVirt CR; flags' values until one exists."""

    def __init__(
        self, factory: SharedInformerFactory, *, namespace: str | None, initial: ClusterConfig
    ) -> None:
        self._namespace = namespace
        self._lock = threading.Lock()
        self._config = initial
        self._settings = LauncherSettings()
        self._log = get_logger()
        informer = factory.informer(KUBEVIRTS, namespace=namespace)
        informer.add_event_handler(self._apply, lambda _old, new: self._apply(new), lambda _gone: None)

    def _apply(self, kubevirt: JSON) -> None:
        config = ClusterConfig.from_kubevirt(kubevirt, install_namespace=self._namespace)
        settings = LauncherSettings.from_kubevirt(kubevirt)
        with self._lock:
            changed = (config, settings) != (self._config, self._settings)
            self._config, self._settings = config, settings
        if changed:
            self._log.info(
                "cluster configuration updated",
                feature_gates=sorted(config.feature_gates),
                rollout_strategy=config.rollout_strategy,
            )

    def cluster_config(self) -> ClusterConfig:
        with self._lock:
            return self._config

    def launcher_settings(self) -> LauncherSettings:
        with self._lock:
            return self._settings
