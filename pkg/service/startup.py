"""What a component checks before it serves: its certificate files, and a client for its cluster."""

from __future__ import annotations

from pathlib import Path

from kubevirt.client import KubeClient, KubeConfigError
from kubevirt.log import get_logger


def tls_files_present(*paths: Path) -> bool:
    """Whether every serving-certificate file exists; the first one missing is logged."""
    for path in paths:
        if not path.is_file():
            get_logger().error("TLS file not found", path=str(path))
            return False
    return True


def cluster_client(kubeconfig: str | None, component: str) -> KubeClient | None:
    """A client for ``kubeconfig`` (the pod's service account when None); None, logged, when it cannot be
    made, so that the component exits with its own code instead of a traceback."""
    try:
        return KubeClient.from_kubeconfig(kubeconfig, user_agent=component)
    except KubeConfigError as err:
        get_logger().error(f"{component} cannot reach the cluster", reason=str(err))
        return None
