"""virt-api's own metrics: the streams open through it, when each VMI was last connected to, and the VMs
created through its admission webhook.

The families are made unregistered, and :func:`register` adds them to the registry virt-api serves, as
KubeVirt sets them up when virt-api starts rather than when the code is loaded. Handlers update them
through :func:`active_connection` and :func:`vm_created`.

``kubevirt_api_request_deprecated_total`` is not here: KubeVirt derives it with a recording rule from
the API server's own metrics, virt-api never counts it.
"""

from __future__ import annotations

import enum
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from prometheus_client import REGISTRY, CollectorRegistry, Gauge
from prometheus_client.core import CounterMetricFamily
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

__all__ = [
    "ConnectionKind",
    "active_connection",
    "metric_descriptions",
    "register",
    "vm_created",
]

# (name, type, help) as KubeVirt's metrics documentation lists them.
MetricDescription = tuple[str, str, str]


class ConnectionKind(enum.StrEnum):
    """The streams virt-api relays; each has its own gauge of open connections."""

    CONSOLE = "console"
    VNC = "vnc"
    PORTFORWARD = "portforward"
    USBREDIR = "usbredir"


_VMI_LABELS = ("namespace", "vmi")

_ACTIVE_SPECS = {
    ConnectionKind.PORTFORWARD: (
        "kubevirt_portforward_active_tunnels",
        "Amount of active portforward tunnels, broken down by namespace and vmi name.",
    ),
    ConnectionKind.VNC: (
        "kubevirt_vnc_active_connections",
        "Amount of active VNC connections, broken down by namespace and vmi name.",
    ),
    ConnectionKind.CONSOLE: (
        "kubevirt_console_active_connections",
        "Amount of active Console connections, broken down by namespace and vmi name.",
    ),
    ConnectionKind.USBREDIR: (
        "kubevirt_usbredir_active_connections",
        "Amount of active USB redirection connections, broken down by namespace and vmi name.",
    ),
}
_LAST_CONNECTION_NAME = "kubevirt_vmi_last_api_connection_timestamp_seconds"
_LAST_CONNECTION_HELP = (
    "Virtual Machine Instance last API connection timestamp. "
    "Including VNC, console, portforward, SSH and usbredir connections."
)
_CREATED_NAME = "kubevirt_vm_created_by_pod_total"
_CREATED_HELP = "The total number of VMs created by namespace and virt-api pod, since install."

_ACTIVE = {kind: Gauge(*described, _VMI_LABELS, registry=None) for kind, described in _ACTIVE_SPECS.items()}
_LAST_CONNECTION = Gauge(_LAST_CONNECTION_NAME, _LAST_CONNECTION_HELP, _VMI_LABELS, registry=None)

# Seconds since the epoch; KubeVirt records whole seconds.
clock: Callable[[], float] = time.time


class _VMsCreated(Collector):
    """The per-namespace count of created VMs, exposed without the ``_created`` series prometheus_client's
    own counters add (KubeVirt's Go client has none)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: dict[str, float] = {}

    def inc(self, namespace: str) -> None:
        with self._lock:
            self._counts[namespace] = self._counts.get(namespace, 0.0) + 1.0

    def describe(self) -> list[Metric]:
        return [CounterMetricFamily(_CREATED_NAME, _CREATED_HELP, labels=["namespace"])]

    def collect(self) -> Iterator[Metric]:
        family = CounterMetricFamily(_CREATED_NAME, _CREATED_HELP, labels=["namespace"])
        with self._lock:
            counts = sorted(self._counts.items())
        for namespace, value in counts:
            family.add_metric([namespace], value)
        yield family


_VMS_CREATED = _VMsCreated()


_COLLECTORS: tuple[Collector, ...] = (*_ACTIVE.values(), _LAST_CONNECTION, _VMS_CREATED)
_registered: weakref.WeakSet[CollectorRegistry] = weakref.WeakSet()
_register_lock = threading.Lock()


def register(registry: CollectorRegistry = REGISTRY) -> None:
    """Adds virt-api's families to ``registry``; a second call for the same registry does nothing."""
    with _register_lock:
        if registry in _registered:
            return
        for collector in _COLLECTORS:
            registry.register(collector)
        _registered.add(registry)


@contextmanager
def active_connection(kind: ConnectionKind, namespace: str, name: str) -> Iterator[None]:
    """Counts one open ``kind`` stream to VMI ``namespace/name`` while the block runs; when it ends, for
    whatever reason, the VMI's last-connection time is stamped and the stream no longer counted.

    As in KubeVirt, the whole request is counted, refused ones included: it is entered before the VMI is
    looked up.
    """
    gauge = _ACTIVE[kind].labels(namespace, name)
    gauge.inc()
    try:
        yield
    finally:
        _LAST_CONNECTION.labels(namespace, name).set(int(clock()))
        gauge.dec()


def vm_created(namespace: str) -> None:
    """One more VM created in ``namespace`` (an admitted create that is not a dry run)."""
    _VMS_CREATED.inc(namespace)


def metric_descriptions() -> list[MetricDescription]:
    """Every family virt-api exposes from this module, as (name, type, help)."""
    gauges = [*_ACTIVE_SPECS.values(), (_LAST_CONNECTION_NAME, _LAST_CONNECTION_HELP)]
    return [
        *((name, "Gauge", help_text) for name, help_text in gauges),
        (_CREATED_NAME, "Counter", _CREATED_HELP),
    ]
