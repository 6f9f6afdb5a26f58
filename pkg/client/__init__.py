"""The Kubernetes client every component shares: REST reads and writes on plain JSON, watches, events.

Threads, not asyncio. The ``kubernetes`` package's configuration and connection pool, urllib3 and the
libvirt bindings are all blocking; an asyncio runtime would have to push every request and every libvirt
call into executor threads anyway, and a reconciler would pay for coroutine plumbing without gaining
concurrency. Controllers here run a few worker threads per queue (as client-go runs goroutines), each
blocking on one request at a time; watches run in their own threads. The work is I/O bound, so the GIL is
not the limit. virt-api's aiohttp server calls into this package from its executor.
"""

from kubevirt.client.connection import KubeConfigError, install_namespace, own_namespace
from kubevirt.client.errors import (
    AlreadyExistsError,
    ApiError,
    ConflictError,
    ConnectionFailedError,
    ForbiddenError,
    GoneError,
    InvalidError,
    NotFoundError,
)
from kubevirt.client.events import EventRecorder
from kubevirt.client.kubeclient import KubeClient
from kubevirt.client.protocols import JSON, EventSink, KubeApi, KubeReader
from kubevirt.client.resources import (
    CONFIG_MAPS,
    EVENTS,
    KUBEVIRTS,
    LEASES,
    NODES,
    PERSISTENT_VOLUME_CLAIMS,
    POD_DISRUPTION_BUDGETS,
    PODS,
    VIRTUAL_MACHINE_INSTANCE_MIGRATIONS,
    VIRTUAL_MACHINE_INSTANCE_REPLICA_SETS,
    VIRTUAL_MACHINE_INSTANCES,
    VIRTUAL_MACHINE_POOLS,
    VIRTUAL_MACHINES,
    Resource,
)

__all__ = [
    "CONFIG_MAPS",
    "EVENTS",
    "JSON",
    "KUBEVIRTS",
    "LEASES",
    "NODES",
    "PERSISTENT_VOLUME_CLAIMS",
    "PODS",
    "POD_DISRUPTION_BUDGETS",
    "VIRTUAL_MACHINES",
    "VIRTUAL_MACHINE_INSTANCES",
    "VIRTUAL_MACHINE_INSTANCE_MIGRATIONS",
    "VIRTUAL_MACHINE_INSTANCE_REPLICA_SETS",
    "VIRTUAL_MACHINE_POOLS",
    "AlreadyExistsError",
    "ApiError",
    "ConflictError",
    "ConnectionFailedError",
    "EventRecorder",
    "EventSink",
    "ForbiddenError",
    "GoneError",
    "InvalidError",
    "KubeApi",
    "KubeClient",
    "KubeConfigError",
    "KubeReader",
    "NotFoundError",
    "Resource",
    "install_namespace",
    "own_namespace",
]
