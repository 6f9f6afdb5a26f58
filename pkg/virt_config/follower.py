"""Keeping a process's cluster configuration equal to the KubeVirt CR's.

One follower per process holds the configuration in force, and every reader in that process asks it.
It is fed by a KubeVirt informer where the process runs informers (virt-controller, virt-handler,
virt-operator), and otherwise by reading the CR every few seconds (virt-api). A CR whose configuration is
invalid does not replace the configuration in force: as in KubeVirt, the last valid one is kept and the
reason is logged.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from kubevirt.client import KUBEVIRTS
from kubevirt.controller import SharedInformerFactory
from kubevirt.log import get_logger
from kubevirt_api.view import View

from .config import ClusterConfig, InvalidConfigurationError


class KubeVirtLister(Protocol):
    def list_kubevirts(self, namespace: str | None) -> list[dict[str, Any]]:
        """The KubeVirt CRs in ``namespace`` (all namespaces when ``None``)."""
        ...


class ConfigFollower:
    """The configuration in force: ``initial`` (KubeVirt's defaults unless given) until a valid KubeVirt
    CR is seen in ``namespace`` (any namespace when ``None``).

    Listeners given to :meth:`on_change` are called, on the thread that saw the CR, after each change.
    ``read_errors`` are the lister's own failures, logged as warnings and retried on the next round.
    """

    def __init__(
        self,
        namespace: str | None,
        *,
        initial: ClusterConfig | None = None,
        lister: KubeVirtLister | None = None,
        read_errors: tuple[type[Exception], ...] = (),
    ) -> None:
        self._namespace = namespace
        self._lister = lister
        self._read_errors = read_errors
        self._lock = threading.Lock()
        self._config = initial if initial is not None else ClusterConfig()
        self._listeners: list[Callable[[], None]] = []
        self._resource_version = ""
        self._log = get_logger()

    @classmethod
    def from_informer(
        cls, factory: SharedInformerFactory, namespace: str | None, *, initial: ClusterConfig | None = None
    ) -> ConfigFollower:
        """A follower fed by ``factory``'s KubeVirt informer (started with that factory)."""
        follower = cls(namespace, initial=initial)

        def seen(kubevirt: dict[str, Any]) -> None:
            follower.observe(kubevirt)

        factory.informer(KUBEVIRTS, namespace=namespace).add_event_handler(
            seen, lambda _old, new: seen(new), lambda _gone: None
        )
        return follower

    def current(self) -> ClusterConfig:
        with self._lock:
            return self._config

    def resource_version(self) -> str:
        """The resourceVersion of the last valid KubeVirt CR taken ("" before one): what the components'
        ``/healthz`` reports as ``config-resource-version``, so tools can wait for a CR change to land.
        A CR whose change left the configuration equal still counts, as in KubeVirt."""
        return self._resource_version

    def on_change(self, listener: Callable[[], None]) -> None:
        self._listeners.append(listener)

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
        with self._lock:
            changed = config != self._config
            if changed:
                self._config = config
        if changed:
            for listener in self._listeners:
                listener()
        # Taken last: a health check that reports this version finds its configuration in force.
        self._resource_version = _resource_version_of(kubevirt)
        if changed:
            self._log.info(
                "cluster configuration updated",
                feature_gates=sorted(config.feature_gates),
                rollout_strategy=config.rollout_strategy,
            )
        return changed

    async def follow(self, interval: float) -> None:
        """Read the CR every ``interval`` seconds, for a process without informers."""
        while True:
            try:
                await asyncio.to_thread(self.refresh)
            except Exception:  # an unexpected answer must not stop following for good
                self._log.exception("reading the KubeVirt configuration failed")
            await asyncio.sleep(interval)


def _resource_version_of(kubevirt: Mapping[str, Any]) -> str:
    # Read once the CR was found valid, so its metadata is an object.
    return str(View.of(kubevirt).object("metadata").get("resourceVersion") or "")
