"""Keeping a component's cluster configuration equal to the KubeVirt CR's.

One follower serves every reader of the configuration in a process; it reads the CR through whatever
lists KubeVirt objects (a shared informer once the controller runtime exists, plain LIST calls until
then). A CR whose configuration is invalid does not replace the configuration in force: as in KubeVirt,
the last valid one is kept and the reason is logged.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from kubevirt.log import get_logger

from .config import ClusterConfig, InvalidConfigurationError


class KubeVirtLister(Protocol):
    def list_kubevirts(self, namespace: str | None) -> list[dict[str, Any]]:
        """The KubeVirt CRs in ``namespace`` (all namespaces when ``None``)."""
        ...


class ConfigFollower:
    """Reads the KubeVirt CR and hands each new valid configuration to ``publish``.

    Until a KubeVirt CR is found (or without a cluster) the configuration given at start stays in force.
    ``read_errors`` are the lister's own failures, logged as warnings and retried on the next round.
    Components with a KubeVirt informer give no lister and hand each CR they see to :meth:`observe`.
    """

    def __init__(
        self,
        lister: KubeVirtLister | None,
        namespace: str | None,
        *,
        current: Callable[[], ClusterConfig],
        publish: Callable[[ClusterConfig], None],
        read_errors: tuple[type[Exception], ...] = (),
    ) -> None:
        self._lister = lister
        self._namespace = namespace
        self._current = current
        self._publish = publish
        self._read_errors = read_errors
        self._resource_version = ""
        self._log = get_logger()

    @property
    def resource_version(self) -> str:
        """The resourceVersion of the last valid KubeVirt CR taken ("" before one): what the components'
        ``/healthz`` reports as ``config-resource-version``, so tools can wait for a CR change to land.
        A CR whose change left the configuration equal still counts, as in KubeVirt."""
        return self._resource_version

    def refresh(self) -> bool:
        """Read the CR once through the lister; returns whether the configuration changed."""
        if self._lister is None:
            return False
        try:
            kubevirts = self._lister.list_kubevirts(self._namespace)
        except self._read_errors as err:
            self._log.warning("cannot read the KubeVirt configuration", reason=str(err))
            return False
        return self.observe(kubevirts[0]) if kubevirts else False

    def observe(self, kubevirt: Mapping[str, Any]) -> bool:
        """Take the configuration of this KubeVirt CR if it is valid; returns whether it changed."""
        try:
            config = ClusterConfig.from_kubevirt(kubevirt, install_namespace=self._namespace)
        except InvalidConfigurationError as err:
            self._log.warning("invalid KubeVirt configuration, keeping the last valid one", reason=str(err))
            return False
        if config == self._current():
            self._resource_version = _resource_version_of(kubevirt)
            return False
        self._publish(config)
        # Published first: a health check that reports this version finds its configuration in force.
        self._resource_version = _resource_version_of(kubevirt)
        self._log.info(
            "cluster configuration updated",
            feature_gates=sorted(config.feature_gates),
            rollout_strategy=config.rollout_strategy,
        )
        return True

    async def follow(self, interval: float) -> None:
        while True:
            try:
                await asyncio.to_thread(self.refresh)
            except Exception:  # an unexpected answer must not stop following for good
                self._log.exception("reading the KubeVirt configuration failed")
            await asyncio.sleep(interval)


def _resource_version_of(kubevirt: Mapping[str, Any]) -> str:
    metadata = kubevirt.get("metadata")
    return str(metadata.get("resourceVersion") or "") if isinstance(metadata, Mapping) else ""
