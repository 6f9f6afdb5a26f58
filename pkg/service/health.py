"""KubeVirt's ``/healthz`` answer, shared by virt-api, virt-controller and virt-handler.

``{"apiserver": {"connectivity": "ok", "version": <the API server's /version>},
"config-resource-version": "<rv>"}`` with 200, or ``{"apiserver": {"connectivity": "failed", "error":
...}, "config-resource-version": ...}`` with 500. ``config-resource-version`` is the resourceVersion of the
KubeVirt CR whose configuration the component runs with, so a tool that changed the CR can wait for every
component to report it. As in KubeVirt, the API server's version is read once and then remembered.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from kubevirt_api.view import JSON

CONFIG_RESOURCE_VERSION = "config-resource-version"


class ApiServerHealth:
    """A probe: ``version_probe`` reads the API server's ``/version`` (raising when it cannot),
    ``config_resource_version`` tells the CR version in force."""

    def __init__(self, version_probe: Callable[[], JSON], config_resource_version: Callable[[], str]) -> None:
        self._probe = version_probe
        self._config_resource_version = config_resource_version
        self._version: JSON | None = None
        self._lock = threading.Lock()

    def __call__(self) -> tuple[int, JSON]:
        with self._lock:
            version = self._version
        if version is None:
            try:
                version = self._probe()
            except Exception as err:  # any failure to reach the API server makes the component unhealthy
                return 500, {
                    "apiserver": {"connectivity": "failed", "error": str(err)},
                    CONFIG_RESOURCE_VERSION: self._config_resource_version(),
                }
            with self._lock:
                self._version = version
        return 200, {
            "apiserver": {"connectivity": "ok", "version": version},
            CONFIG_RESOURCE_VERSION: self._config_resource_version(),
        }
