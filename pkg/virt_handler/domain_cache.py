"""The newest domain of each VMI on this node, as the launchers' Notify events and GetDomain left it.

Events arrive keyed by the VMI's namespace/name (the domain's ``ObjectMeta``); a domain whose
``deletionTimestamp`` is set (the launcher's final notification) or a ``DELETED`` event removes it.
Reading the domain with GetDomain resyncs the entry: an event missed while no pipe existed is
corrected on the next reconcile.
"""

from __future__ import annotations

import threading

from kubevirt_api.view import JSON

DELETED = "DELETED"


class DomainEventError(ValueError):
    """A domain event that names no VMI."""


def domain_key(domain: JSON) -> str:
    """``namespace/name`` of the VMI the domain belongs to."""
    meta = domain.get("ObjectMeta")
    if not isinstance(meta, dict):
        raise DomainEventError("domainJSON.ObjectMeta: missing")
    namespace, name = meta.get("namespace"), meta.get("name")
    if not isinstance(name, str) or not name:
        raise DomainEventError("domainJSON.ObjectMeta.name: missing")
    if not isinstance(namespace, str) or not namespace:
        raise DomainEventError("domainJSON.ObjectMeta.namespace: missing")
    return f"{namespace}/{name}"


def domain_uid(domain: JSON) -> str:
    """The VMI UID the domain carries (its metadata, or the event's ``ObjectMeta``)."""
    kubevirt = ((domain.get("Spec") or {}).get("Metadata") or {}).get("KubeVirt") or {}
    return str(kubevirt.get("UID") or (domain.get("ObjectMeta") or {}).get("uid") or "")


def is_final(event_type: str, domain: JSON) -> bool:
    return event_type == DELETED or bool((domain.get("ObjectMeta") or {}).get("deletionTimestamp"))


class DomainCache:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._domains: dict[str, JSON] = {}

    def apply(self, event_type: str, domain: JSON) -> str:
        """Records one Notify event; returns the key of the VMI it concerns."""
        key = domain_key(domain)
        with self._lock:
            if is_final(event_type, domain):
                self._domains.pop(key, None)
            else:
                self._domains[key] = domain
        return key

    def resync(self, key: str, domain: JSON | None) -> None:
        """What GetDomain returned for the VMI ``key`` (None: it has no domain)."""
        with self._lock:
            if domain is None:
                self._domains.pop(key, None)
            else:
                self._domains[key] = domain

    def get(self, key: str) -> JSON | None:
        with self._lock:
            return self._domains.get(key)

    def keys(self) -> list[str]:
        with self._lock:
            return sorted(self._domains)

    def forget(self, key: str) -> None:
        with self._lock:
            self._domains.pop(key, None)
