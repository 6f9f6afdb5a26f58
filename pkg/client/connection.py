"""Where the API server is and how to authenticate, and the pooled HTTP connections to it.

The ``kubernetes`` package is used only for what it does well and what would be risky to redo: reading
kubeconfig files (contexts, exec and token plugins, client certificates) and the in-cluster service
account (with token rotation), and building a configured urllib3 pool (TLS, proxies). Requests are sent
on that pool directly and response bodies are read as raw JSON bytes: the package's generated models and
its response deserialisation are bypassed, because turning thousands of objects into those models and
then back into dicts is many times slower than decoding the JSON once (see hack/bench-informer).
"""

from __future__ import annotations

import os
import ssl
from dataclasses import dataclass
from typing import Any

import urllib3
import yaml
from kubernetes import client as k8s_client
from kubernetes import config as k8s_config
from kubernetes.client import rest as k8s_rest

__all__ = ["Connection", "KubeConfigError", "connect", "install_namespace", "own_namespace"]


class KubeConfigError(ValueError):
    """No usable kubeconfig or service account."""


@dataclass
class Connection:
    """The API server's base URL, a urllib3 pool configured for it, and its authentication headers."""

    host: str
    pool: urllib3.PoolManager
    configuration: Any  # kubernetes.client.Configuration (untyped package)

    def auth_headers(self) -> dict[str, str]:
        # auth_settings() runs the configuration's refresh hook, so rotated tokens are picked up.
        headers: dict[str, str] = {}
        for setting in self.configuration.auth_settings().values():
            if setting.get("in") == "header" and setting.get("value"):
                headers[setting["key"]] = setting["value"]
        basic = self.configuration.get_basic_auth_token()
        if basic and "authorization" not in headers:
            headers["authorization"] = basic
        return headers

    def ssl_context(self) -> ssl.SSLContext:
        """The same TLS settings for connections made outside the pool (websockets)."""
        config = self.configuration
        context = ssl.create_default_context(cafile=config.ssl_ca_cert or None)
        if not config.verify_ssl:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        if config.cert_file:
            context.load_cert_chain(config.cert_file, config.key_file or None)
        return context


def connect(kubeconfig: str | None, *, pool_size: int = 16, context: str | None = None) -> Connection:
    """A connection from ``kubeconfig``; with None, the pod's service account, or else ``$KUBECONFIG``
    (or ``~/.kube/config``) outside a pod. ``context`` picks a kubeconfig context other than the current."""
    configuration = k8s_client.Configuration()
    try:
        if kubeconfig is None and context is None and os.environ.get("KUBERNETES_SERVICE_HOST"):
            k8s_config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
        else:
            k8s_config.load_kube_config(  # type: ignore[no-untyped-call]
                config_file=kubeconfig,
                context=context,
                client_configuration=configuration,
                persist_config=False,
            )
    except (k8s_config.ConfigException, OSError, yaml.YAMLError) as err:
        raise KubeConfigError(f"kubeconfig {kubeconfig or '(default)'}: {err}") from None
    configuration.connection_pool_maxsize = pool_size
    pool = k8s_rest.RESTClientObject(configuration).pool_manager
    return Connection(host=configuration.host.rstrip("/"), pool=pool, configuration=configuration)


SERVICE_ACCOUNT_NAMESPACE = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"


# Where KubeVirt is installed when neither a flag nor the pod says otherwise.
DEFAULT_INSTALL_NAMESPACE = "kubevirt"


def install_namespace(configured: str | None = None) -> str:
    """KubeVirt's namespace for a component: ``configured`` (a flag), else its own pod's, else the default."""
    return configured or own_namespace() or DEFAULT_INSTALL_NAMESPACE


def own_namespace() -> str | None:
    """The namespace this process runs in (``POD_NAMESPACE`` or its service account's), if known."""
    namespace = os.environ.get("POD_NAMESPACE")
    if namespace:
        return namespace
    try:
        with open(SERVICE_ACCOUNT_NAMESPACE, encoding="utf-8") as handle:
            return handle.read().strip() or None
    except OSError:
        return None
