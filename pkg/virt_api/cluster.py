"""Cluster state for the admitters, read from the Kubernetes API (VMIs, migrations, pods).

Lookups are plain GET/LIST calls made while a review is being answered (the server runs admitters off
its event loop); failures become :class:`ClusterStateError` so the admitter answers with the reason.
"""

from __future__ import annotations

import os
from typing import Any

from kubernetes import client, config
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from kubevirt.admission.migration import MIGRATION_SELECTOR_LABEL
from kubevirt.admission.state import ClusterState, ClusterStateError, NoClusterState
from kubevirt.client.resources import INSTANCETYPE_RESOURCES
from kubevirt.log import get_logger
from kubevirt_api.core.v1.constants import GROUP_NAME

JSON = dict[str, Any]
GROUP, VERSION = GROUP_NAME, "v1"
CDI_GROUP, CDI_VERSION = "cdi.kubevirt.io", "v1beta1"
# Each lookup must fit well inside the API server's 10 s webhook timeout.
REQUEST_TIMEOUT = 3.0


class ClusterConfigError(ValueError):
    """The given kubeconfig cannot be used."""


class KubernetesClusterState:
    def __init__(self, api_client: client.ApiClient) -> None:
        self._api = api_client
        self._custom = client.CustomObjectsApi(api_client)
        self._core = client.CoreV1Api(api_client)

    @staticmethod
    def _failed(what: str, err: Exception) -> ClusterStateError:
        reason = f"{err.status} {err.reason}" if isinstance(err, ApiException) else str(err)
        return ClusterStateError(f"cannot read {what}: {reason}")

    def get_vmi(self, namespace: str, name: str) -> JSON | None:
        try:
            found = self._custom.get_namespaced_custom_object(
                GROUP, VERSION, namespace, "virtualmachineinstances", name, _request_timeout=REQUEST_TIMEOUT
            )
        except ApiException as err:
            if err.status == 404:
                return None
            raise self._failed(f"VirtualMachineInstance {namespace}/{name}", err) from None
        except HTTPError as err:
            raise self._failed(f"VirtualMachineInstance {namespace}/{name}", err) from None
        return found if isinstance(found, dict) else None

    def list_migrations(self, namespace: str, vmi_name: str) -> list[JSON]:
        try:
            listed = self._custom.list_namespaced_custom_object(
                GROUP,
                VERSION,
                namespace,
                "virtualmachineinstancemigrations",
                label_selector=f"{MIGRATION_SELECTOR_LABEL} in ({vmi_name})",
                _request_timeout=REQUEST_TIMEOUT,
            )
        except (ApiException, HTTPError) as err:
            raise self._failed(f"migrations of {namespace}/{vmi_name}", err) from None
        items = listed.get("items") if isinstance(listed, dict) else None
        if not isinstance(items, list):
            return []
        return [item for item in items if isinstance(item, dict)]

    def list_vmi_presets(self, namespace: str) -> list[JSON]:
        try:
            listed = self._custom.list_namespaced_custom_object(
                GROUP, VERSION, namespace, "virtualmachineinstancepresets", _request_timeout=REQUEST_TIMEOUT
            )
        except (ApiException, HTTPError) as err:
            raise self._failed(f"VirtualMachineInstancePresets of {namespace}", err) from None
        items = listed.get("items") if isinstance(listed, dict) else None
        return [item for item in items if isinstance(item, dict)] if isinstance(items, list) else []

    def get_pod(self, namespace: str, name: str) -> JSON | None:
        try:
            pod = self._core.read_namespaced_pod(name, namespace, _request_timeout=REQUEST_TIMEOUT)
        except ApiException as err:
            if err.status == 404:
                return None
            raise self._failed(f"pod {namespace}/{name}", err) from None
        except HTTPError as err:
            raise self._failed(f"pod {namespace}/{name}", err) from None
        # The typed pod back to its JSON form, which the rules read.
        document = self._api.sanitize_for_serialization(pod)  # type: ignore[no-untyped-call]
        return document if isinstance(document, dict) else None

    def get_instancetype_object(self, kind: str, namespace: str, name: str) -> JSON | None:
        """An instance type or preference of one of the four ``instancetype.kubevirt.io`` kinds."""
        resource = INSTANCETYPE_RESOURCES[kind]
        what = f"{kind} {namespace}/{name}" if resource.namespaced else f"{kind} {name}"
        try:
            if resource.namespaced:
                found = self._custom.get_namespaced_custom_object(
                    resource.group, resource.version, namespace, resource.plural, name,
                    _request_timeout=REQUEST_TIMEOUT,
                )  # fmt: skip
            else:
                found = self._custom.get_cluster_custom_object(
                    resource.group, resource.version, resource.plural, name, _request_timeout=REQUEST_TIMEOUT
                )
        except ApiException as err:
            if err.status == 404:
                return None
            raise self._failed(what, err) from None
        except HTTPError as err:
            raise self._failed(what, err) from None
        return found if isinstance(found, dict) else None

    def get_controller_revision(self, namespace: str, name: str) -> JSON | None:
        """A ControllerRevision (a VM's stored instance type or preference)."""
        what = f"ControllerRevision {namespace}/{name}"
        try:
            revision = client.AppsV1Api(self._api).read_namespaced_controller_revision(
                name, namespace, _request_timeout=REQUEST_TIMEOUT
            )
        except ApiException as err:
            if err.status == 404:
                return None
            raise self._failed(what, err) from None
        except HTTPError as err:
            raise self._failed(what, err) from None
        found = self._api.sanitize_for_serialization(revision)  # type: ignore[no-untyped-call]
        return found if isinstance(found, dict) else None

    def get_volume_source(self, kind: str, namespace: str, name: str) -> JSON | None:
        """A PVC, or a CDI DataVolume or DataSource, for ``inferFromVolume``."""
        what = f"{kind} {namespace}/{name}"
        try:
            if kind == "PersistentVolumeClaim":
                claim = self._core.read_namespaced_persistent_volume_claim(
                    name, namespace, _request_timeout=REQUEST_TIMEOUT
                )
                found = self._api.sanitize_for_serialization(claim)  # type: ignore[no-untyped-call]
            else:
                plural = {"DataVolume": "datavolumes", "DataSource": "datasources"}[kind]
                found = self._custom.get_namespaced_custom_object(
                    CDI_GROUP, CDI_VERSION, namespace, plural, name, _request_timeout=REQUEST_TIMEOUT
                )
        except ApiException as err:
            if err.status == 404:
                return None
            raise self._failed(what, err) from None
        except HTTPError as err:
            raise self._failed(what, err) from None
        return found if isinstance(found, dict) else None

    def server_version(self) -> JSON:
        """The API server's ``/version`` (what virt-api's health check reports)."""
        try:
            info = client.VersionApi(self._api).get_code(_request_timeout=REQUEST_TIMEOUT)
        except (ApiException, HTTPError) as err:
            raise self._failed("the API server version", err) from None
        document = self._api.sanitize_for_serialization(info)  # type: ignore[no-untyped-call]
        return document if isinstance(document, dict) else {}

    def list_kubevirts(self, namespace: str | None) -> list[JSON]:
        """The KubeVirt CRs in ``namespace`` (all namespaces when ``None``)."""
        try:
            if namespace:
                listed = self._custom.list_namespaced_custom_object(
                    GROUP, VERSION, namespace, "kubevirts", _request_timeout=REQUEST_TIMEOUT
                )
            else:
                listed = self._custom.list_cluster_custom_object(
                    GROUP, VERSION, "kubevirts", _request_timeout=REQUEST_TIMEOUT
                )
        except (ApiException, HTTPError) as err:
            raise self._failed("the KubeVirt configuration", err) from None
        items = listed.get("items") if isinstance(listed, dict) else None
        return [item for item in items if isinstance(item, dict)] if isinstance(items, list) else []

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


def connect(kubeconfig: str | None) -> ClusterState:
    """The API server from ``kubeconfig``, else the in-cluster service account, else no cluster."""
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
    return KubernetesClusterState(client.ApiClient(configuration))
