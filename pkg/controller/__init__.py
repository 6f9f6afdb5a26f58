"""The controller runtime every component shares: informers, caches, work queues, expectations,
controllers and leader election, in client-go's pattern.

Threads, not asyncio: see :mod:`kubevirt.client` for why. Each informer runs one thread (list, then
watch, relist on 410 Gone) and calls its handlers on that thread; a :class:`Controller` runs a few worker
threads per queue. Handlers only enqueue keys; reconcilers read from the caches, never from the API.
"""

from kubevirt.controller.expectations import ControllerExpectations, UIDTrackingControllerExpectations
from kubevirt.controller.factory import SharedInformerFactory
from kubevirt.controller.informer import Informer
from kubevirt.controller.keys import key_for, key_of, split_key
from kubevirt.controller.leaderelection import LeaderElector
from kubevirt.controller.queue import RateLimitingQueue
from kubevirt.controller.reconciler import Reconciler, RequeueAfter
from kubevirt.controller.runner import Controller
from kubevirt.controller.store import Store

__all__ = [
    "Controller",
    "ControllerExpectations",
    "Informer",
    "LeaderElector",
    "RateLimitingQueue",
    "Reconciler",
    "RequeueAfter",
    "SharedInformerFactory",
    "Store",
    "UIDTrackingControllerExpectations",
    "key_for",
    "key_of",
    "split_key",
]
