"""The CDIConfig controller: keeps the one CDIConfig (``config``) and its status, which the DataVolume and
import controllers read (filesystem overhead per class, scratch class, worker resources, proxies), and
marks the CDI CR Deployed. When the CDI CR carries the configAuthority annotation its ``spec.config`` is
the CDIConfig's spec."""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from kubevirt.cdi_controller import meta
from kubevirt.cdi_controller.caches import Caches
from kubevirt.cdi_controller.render import recommended_labels
from kubevirt.client import EventSink, KubeApi
from kubevirt.client.resources import CDI_CONFIGS, CDIS
from kubevirt_api.cdi import constants as cdi
from kubevirt_api.view import JSON

DEFAULT_LIMITS = {"cpu": "750m", "memory": "600M"}
DEFAULT_REQUESTS = {"cpu": "100m", "memory": "60M"}
_OVERHEAD = re.compile(r"^(0(?:\.\d{1,3})?|1)$")
DEPLOYED = "Deployed"
DEPLOY_COMPLETED = "DeployCompleted"
DEPLOYMENT_COMPLETED = "Deployment Completed"


class InvalidOverheadError(ValueError):
    pass


def valid_overhead(value: Any) -> bool:
    return isinstance(value, str) and _OVERHEAD.match(value) is not None


class ConfigController:
    def __init__(self, *, api: KubeApi, events: EventSink, caches: Caches) -> None:
        self._api = api
        self._events = events
        self._caches = caches

    def reconcile(self, key: str) -> None:
        """One key for all: the CDIConfig's name."""
        config = self._caches.config()
        if config is None:
            config = self._api.create(CDI_CONFIGS, None, _empty_config())
        desired = self.desired(config)
        if desired != config:
            self._api.update(CDI_CONFIGS, None, desired)
        for cr in self._caches.cdis.list():
            self._mark_deployed(cr)

    def desired(self, config: Mapping[str, Any]) -> JSON:
        result = copy.deepcopy(dict(config))
        result.setdefault("metadata", {}).setdefault("labels", {}).update(recommended_labels())
        cr = next(iter(self._caches.cdis.list()), None)
        if cr is not None and cdi.Annotation.CONFIG_AUTHORITY in meta.annotations_of(cr):
            result["spec"] = copy.deepcopy((cr.get("spec") or {}).get("config") or {})
        spec = result.get("spec") or {}
        status = result.setdefault("status", {})
        status["preallocation"] = spec.get("preallocation") is True
        _set_or_drop(status, "uploadProxyURL", spec.get("uploadProxyURLOverride"))
        status["scratchSpaceStorageClass"] = self._scratch_class(spec)
        status["defaultPodResourceRequirements"] = _pod_resources(spec)
        _set_or_drop(status, "imagePullSecrets", spec.get("imagePullSecrets"))
        status["filesystemOverhead"] = self._filesystem_overhead(spec)
        status["importProxy"] = copy.deepcopy(spec.get("importProxy")) or {
            "HTTPProxy": "",
            "HTTPSProxy": "",
            "noProxy": "",
            "trustedCAProxy": "",
        }
        return result

    def _scratch_class(self, spec: Mapping[str, Any]) -> str:
        wanted = spec.get("scratchSpaceStorageClass")
        if wanted is not None and self._caches.storage_classes.get_by_key(str(wanted)) is not None:
            return str(wanted)
        return self._caches.default_storage_class_name() or ""

    def _filesystem_overhead(self, spec: Mapping[str, Any]) -> JSON:
        wanted = spec.get("filesystemOverhead") or {}
        global_overhead = (
            wanted.get("global") if valid_overhead(wanted.get("global")) else cdi.DEFAULT_FILESYSTEM_OVERHEAD
        )
        per_class_wanted = wanted.get("storageClass") or {}
        per_class = {}
        for storage_class in self._caches.storage_classes.list():
            name = meta.name(storage_class)
            value = per_class_wanted.get(name, global_overhead)
            if not valid_overhead(value):
                raise InvalidOverheadError(
                    f"spec.filesystemOverhead.storageClass[{name}]: {value!r} is not between 0 and 1"
                )
            per_class[name] = value
        return {"global": global_overhead, "storageClass": per_class}

    def _mark_deployed(self, cr: Mapping[str, Any]) -> None:
        """The CDI CR as CDI's operator leaves it once everything runs: Deployed, available, settled."""
        status = cr.get("status") or {}
        if status.get("phase") == DEPLOYED:
            return
        updated = copy.deepcopy(dict(cr))
        now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        conditions = [
            _operator_condition("Available", "True", DEPLOY_COMPLETED, DEPLOYMENT_COMPLETED, now),
            _operator_condition("Progressing", "False", "", "", now),
            _operator_condition("Degraded", "False", "", "", now),
        ]
        updated["status"] = {**status, "phase": DEPLOYED, "conditions": conditions}
        written = self._api.update(CDIS, None, updated)
        self._events.event(written, "Normal", DEPLOY_COMPLETED, DEPLOYMENT_COMPLETED)


def _operator_condition(kind: str, status: str, reason: str, message: str, now: str) -> JSON:
    condition: JSON = {"type": kind, "status": status, "lastHeartbeatTime": now, "lastTransitionTime": now}
    if reason:
        condition["reason"] = reason
    if message:
        condition["message"] = message
    return condition


def _pod_resources(spec: Mapping[str, Any]) -> JSON:
    wanted = spec.get("podResourceRequirements") or {}
    limits, requests = dict(DEFAULT_LIMITS), dict(DEFAULT_REQUESTS)
    for target, source in ((limits, wanted.get("limits") or {}), (requests, wanted.get("requests") or {})):
        for resource in ("cpu", "memory"):
            if resource in source:
                target[resource] = source[resource]
    return {"limits": limits, "requests": requests}


def _set_or_drop(target: JSON, key: str, value: Any) -> None:
    if value is None:
        target.pop(key, None)
    else:
        target[key] = copy.deepcopy(value)


def _empty_config() -> JSON:
    return {
        "apiVersion": cdi.API_VERSION,
        "kind": "CDIConfig",
        "metadata": {"name": cdi.CDI_CONFIG_NAME, "labels": recommended_labels()},
        "spec": {},
    }
