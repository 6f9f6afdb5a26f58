"""Cluster state for the admitters, read from the Kubernetes API (VMIs, migrations, pods).

Lookups are plain GET/LIST calls made while a review is being answered (the server runs admitters off
its event loop); failures become :class:`ClusterStateError` so the admitter answers with the reason.
VirtualMachineInstancePresets, read for every VMI created, come from an informer's cache instead.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from kubernetes import client, config
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from kubevirt.admission.migration import MIGRATION_SELECTOR_LABEL
from kubevirt.admission.state import ClusterState, ClusterStateError, NoClusterState
from kubevirt.client.resources import INSTANCETYPE_RESOURCES
from kubevirt.log import get_logger
from kubevirt.virt_api.presets import PresetCache
from kubevirt_api.core.v1.constants import GROUP_NAME

JSON = dict[str, Any]
GROUP, VERSION = GROUP_NAME, "v1"
CDI_GROUP, CDI_VERSION = "cdi.kubevirt.io", "v1beta1"
# Each lookup must fit well inside the API server's 10 s webhook timeout.
REQUEST_TIMEOUT = 3.0


class ClusterConfigError(ValueError):
    """The given kubeconfig cannot be used."""


class KubernetesClusterState:
    def __init__(self, api_client: client.ApiClient, presets: PresetCache | None = None) -> None:
        self._api = api_client
        self._presets = presets
        self._custom = client.CustomObjectsApi(api_client)
        self._core = client.CoreV1Api(api_client)

    @staticmethod
    def _failed(what: str, err: Exception) -> ClusterStateError:
        reason = f"{err.status} {err.reason}" if isinstance(err, ApiException) else str(err)
        return ClusterStateError(f"cannot read {what}: {reason}")

    def _as_json(self, found: object) -> JSON | None:
        """Custom objects arrive as dicts; typed models go back to the JSON form the rules read."""
        if not isinstance(found, dict):
            found = self._api.sanitize_for_serialization(found)  # type: ignore[no-untyped-call]
        return found if isinstance(found, dict) else None

    def _get(self, what: str, read: Callable[[], object]) -> JSON | None:
        """One object, or ``None`` when the API server says it does not exist."""
        try:
            found = read()
        except ApiException as err:
            if err.status == 404:
                return None
            raise self._failed(what, err) from None
        except HTTPError as err:
            raise self._failed(what, err) from None
        return self._as_json(found)

    def _list(self, what: str, read: Callable[[], object]) -> list[JSON]:
        """The items of a custom-object list; anything that is not an object is dropped."""
        try:
            listed = read()
        except (ApiException, HTTPError) as err:
            raise self._failed(what, err) from None
        items = listed.get("items") if isinstance(listed, dict) else None
        return [item for item in items if isinstance(item, dict)] if isinstance(items, list) else []

    def get_vmi(self, namespace: str, name: str) -> JSON | None:
        return self._get(
            f"VirtualMachineInstance {namespace}/{name}",
            lambda: self._custom.get_namespaced_custom_object(
                GROUP, VERSION, namespace, "virtualmachineinstances", name, _request_timeout=REQUEST_TIMEOUT
            ),
        )

    def list_migrations(self, namespace: str, vmi_name: str) -> list[JSON]:
        return self._list(
            f"migrations of {namespace}/{vmi_name}",
            lambda: self._custom.list_namespaced_custom_object(
                GROUP,
                VERSION,
                namespace,
                "virtualmachineinstancemigrations",
                label_selector=f"{MIGRATION_SELECTOR_LABEL} in ({vmi_name})",
                _request_timeout=REQUEST_TIMEOUT,
            ),
        )

    def list_vmi_presets(self, namespace: str) -> list[JSON]:
        cached = self._presets.in_namespace(namespace) if self._presets is not None else None
        if cached is not None:
            return cached
        # Before the informer's first list has landed its empty cache would silently leave the presets
        # out, so ask the API server as a review always did. That first list lands within milliseconds of
        # start-up, so only virt-api's first reviews (or all of them while the API server cannot be
        # listed, where this LIST then refuses with the reason) pay for it; waiting for the cache instead
        # would add that latency and a second time-out to every such review for no better answer.
        return self._list(
            f"VirtualMachineInstancePresets of {namespace}",
            lambda: self._custom.list_namespaced_custom_object(
                GROUP, VERSION, namespace, "virtualmachineinstancepresets", _request_timeout=REQUEST_TIMEOUT
            ),
        )

    def get_pod(self, namespace: str, name: str) -> JSON | None:
        return self._get(
            f"pod {namespace}/{name}",
            lambda: self._core.read_namespaced_pod(name, namespace, _request_timeout=REQUEST_TIMEOUT),
        )

    def get_instancetype_object(self, kind: str, namespace: str, name: str) -> JSON | None:
        """An instance type or preference of one of the four ``instancetype.kubevirt.io`` kinds."""
        resource = INSTANCETYPE_RESOURCES[kind]
        if resource.namespaced:
            return self._get(
                f"{kind} {namespace}/{name}",
                lambda: self._custom.get_namespaced_custom_object(
                    resource.group, resource.version, namespace, resource.plural, name,
                    _request_timeout=REQUEST_TIMEOUT,
                ),
            )  # fmt: skip
        return self._get(
            f"{kind} {name}",
            lambda: self._custom.get_cluster_custom_object(
                resource.group, resource.version, resource.plural, name, _request_timeout=REQUEST_TIMEOUT
            ),
        )

    def get_controller_revision(self, namespace: str, name: str) -> JSON | None:
        """A ControllerRevision (a VM's stored instance type or preference)."""
        return self._get(
            f"ControllerRevision {namespace}/{name}",
            lambda: client.AppsV1Api(self._api).read_namespaced_controller_revision(
                name, namespace, _request_timeout=REQUEST_TIMEOUT
            ),
        )

    def get_volume_source(self, kind: str, namespace: str, name: str) -> JSON | None:
        """A PVC, or a CDI DataVolume or DataSource, for ``inferFromVolume``."""
        what = f"{kind} {namespace}/{name}"
        if kind == "PersistentVolumeClaim":
            return self._get(
                what,
                lambda: self._core.read_namespaced_persistent_volume_claim(
                    name, namespace, _request_timeout=REQUEST_TIMEOUT
                ),
            )
        plural = {"DataVolume": "datavolumes", "DataSource": "datasources"}[kind]
        return self._get(
            what,
            lambda: self._custom.get_namespaced_custom_object(
                CDI_GROUP, CDI_VERSION, namespace, plural, name, _request_timeout=REQUEST_TIMEOUT
            ),
        )

    def server_version(self) -> JSON:
        """The API server's ``/version`` (what virt-api's health check reports)."""
        try:
            info = client.VersionApi(self._api).get_code(_request_timeout=REQUEST_TIMEOUT)
        except (ApiException, HTTPError) as err:
            raise self._failed("the API server version", err) from None
        return self._as_json(info) or {}

    def list_kubevirts(self, namespace: str | None) -> list[JSON]:
        """The KubeVirt CRs in ``namespace`` (all namespaces when ``None``)."""
        if namespace:
            return self._list(
                "the KubeVirt configuration",
                lambda: self._custom.list_namespaced_custom_object(
                    GROUP, VERSION, namespace, "kubevirts", _request_timeout=REQUEST_TIMEOUT
                ),
            )
        return self._list(
            "the KubeVirt configuration",
            lambda: self._custom.list_cluster_custom_object(
                GROUP, VERSION, "kubevirts", _request_timeout=REQUEST_TIMEOUT
            ),
        )

    def patch_vmi(self, namespace: str, name: str, patch: list[JSON]) -> None:
        try:
            self._custom.patch_namespaced_custom_object(
                GROUP,
                VERSION,
                namespace,
                "virtualmachineinstances",
                name,
                patch,
                _content_type="application/json-patch+json",
                _request_timeout=REQUEST_TIMEOUT,
            )
        except (ApiException, HTTPError) as err:
            raise self._failed(f"VirtualMachineInstance {namespace}/{name} (patch)", err) from None


def connect(kubeconfig: str | None, presets: PresetCache | None = None) -> ClusterState:
    """The API server from ``kubeconfig``, else the in-cluster service account, else no cluster;
    ``presets`` answers the preset lookups once it has synced."""
    configuration = client.Configuration()
    if kubeconfig:
        try:
            config.load_kube_config(config_file=kubeconfig, client_configuration=configuration)  # type: ignore[no-untyped-call]
        except (OSError, config.ConfigException) as err:
            raise ClusterConfigError(f"cannot use kubeconfig {kubeconfig}: {err}") from None
    elif os.environ.get("KUBERNETES_SERVICE_HOST"):
        try:
            config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
        except config.ConfigException as err:
            # A pod without a service account token: serve what needs no cluster state.
            get_logger().warning("no in-cluster credentials, serving without cluster state", reason=str(err))
            return NoClusterState()
    else:
        return NoClusterState()
    # No silent retries: the API server waits for the answer, and a refusal with the reason is better.
    configuration.retries = 0
    return KubernetesClusterState(client.ApiClient(configuration), presets)
