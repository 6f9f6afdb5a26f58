"""KubeVirt installed as its users install it: the release operator manifest, then a KubeVirt CR; the
operator does the rest. Removed in the reverse order: the CR (the operator uninstalls), then the manifest.

Two things are adjusted for this cluster, both through knobs a KubeVirt user has: images are never pulled
(they are built and imported locally), and virt-handler's host mounts drop ``Bidirectional`` propagation
(the host's root is not a shared mount here) through the CR's ``customizeComponents.patches``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from .handle import Cluster
from .layout import REPO

RELEASE = REPO / "manifests" / "release"
OPERATOR_MANIFEST = RELEASE / "kubevirt-operator.yaml"
CR_MANIFEST = RELEASE / "kubevirt-cr.yaml"
NAMESPACE = "kubevirt"
CR_NAME = "kubevirt"
OPERATOR = "virt-operator"
COMPONENT_DEPLOYMENTS = ("virt-api", "virt-controller")
HANDLER = "virt-handler"

JSON = dict[str, Any]
Progress = Callable[[str], None]


def _documents(path: Path) -> list[JSON]:
    return [d for d in yaml.safe_load_all(path.read_text()) if isinstance(d, dict)]


def operator_objects() -> list[JSON]:
    """The release operator manifest with the operator's pods never pulling their image."""
    objects = _documents(OPERATOR_MANIFEST)
    for obj in objects:
        if obj.get("kind") == "Deployment":
            for container in obj["spec"]["template"]["spec"]["containers"]:
                container["imagePullPolicy"] = "Never"
    return objects


# virt-handler's mounts with Bidirectional propagation (name, path): KubeVirt's DaemonSet shares mounts it
# makes for guests with the host this way, which needs the host's mount to be shared.
HANDLER_SHARED_MOUNTS = (("virt-share-dir", "/var/run/kubevirt"), ("kubelet", "/var/lib/kubelet"))


def handler_propagation_patch() -> JSON:
    """A ``customizeComponents.patches`` entry removing the propagation of virt-handler's shared mounts.
    Each mount names both its ``name`` and its ``mountPath``, so a strategic merge matches it by either."""
    mounts = [{"name": n, "mountPath": p, "mountPropagation": None} for n, p in HANDLER_SHARED_MOUNTS]
    body = {"spec": {"template": {"spec": {"containers": [{"name": HANDLER, "volumeMounts": mounts}]}}}}
    return {
        "resourceType": "DaemonSet",
        "resourceName": HANDLER,
        "type": "strategic",
        "patch": json.dumps(body),
    }


def kubevirt_cr() -> JSON:
    """The release CR with emulation on (KVM guests hang on this kind of machine), images never pulled
    and virt-handler's mounts fitted to this host."""
    (cr,) = [d for d in _documents(CR_MANIFEST) if d.get("kind") == "KubeVirt"]
    spec = cr.setdefault("spec", {})
    spec["imagePullPolicy"] = "Never"
    developer = spec.setdefault("configuration", {}).setdefault("developerConfiguration", {})
    developer["useEmulation"] = True
    customize = spec.get("customizeComponents") or {}
    customize["patches"] = [*customize.get("patches", []), handler_propagation_patch()]
    spec["customizeComponents"] = customize
    return cr


def install_operator(cluster: Cluster) -> None:
    # Server-side: the KubeVirt CRD is larger than client-side apply's last-applied annotation allows.
    cluster.kubectl(
        "apply", "--server-side", "--force-conflicts", "-f", "-", stdin=yaml.safe_dump_all(operator_objects())
    )
    cluster.kubectl("wait", "--for=condition=Established", "--timeout=60s", "crd/kubevirts.kubevirt.io")


def create_kubevirt(cluster: Cluster, cr: JSON) -> None:
    cluster.kubectl("apply", "--server-side", "--force-conflicts", "-f", "-", stdin=yaml.safe_dump(cr))


def kubevirt(cluster: Cluster) -> JSON | None:
    return cluster.find("kubevirt", CR_NAME, NAMESPACE)


def wait_deployed(cluster: Cluster, *, timeout: float = 600.0, progress: Progress = print) -> float:
    """Waits until the CR's phase is ``Deployed`` and its Available condition is true, reporting each
    change of phase or condition with the seconds elapsed; returns the seconds it took."""
    began = time.monotonic()
    seen = ""
    while True:
        elapsed = time.monotonic() - began
        cr = kubevirt(cluster) or {}
        status = cr.get("status", {})
        conditions = {c["type"]: c for c in status.get("conditions", [])}
        summary = f"phase {status.get('phase', '-')}; " + ", ".join(
            f"{kind}={c['status']}" for kind, c in sorted(conditions.items())
        )
        if summary != seen:
            progress(f"  [{elapsed:5.0f} s] KubeVirt {summary}")
            seen = summary
        available = conditions.get("Available", {}).get("status") == "True"
        if status.get("phase") == "Deployed" and available:
            return elapsed
        if elapsed > timeout:
            pods = cluster.kubectl("get", "pods", "-n", NAMESPACE, "-o", "wide", check=False).stdout
            raise RuntimeError(f"KubeVirt not Deployed within {timeout:.0f} s: {summary}\n{pods}")
        time.sleep(1.0)


def uninstall(cluster: Cluster, *, timeout: float = 300.0) -> None:
    """Deletes the CR and waits for the operator to finish uninstalling, then removes the operator's
    manifest (its namespace, CRD, RBAC and Deployment)."""
    if kubevirt(cluster) is not None:
        cluster.kubectl("delete", "kubevirt", CR_NAME, "-n", NAMESPACE, "--wait=false")
        cluster.wait_until("the KubeVirt CR is gone", lambda: kubevirt(cluster) is None, timeout=timeout)
    cluster.kubectl(
        "delete",
        "--ignore-not-found",
        "--wait=true",
        "--timeout=100s",
        "-f",
        "-",
        stdin=yaml.safe_dump_all(operator_objects()),
        check=False,
    )
    cluster.wait_until(
        f"namespace {NAMESPACE} is gone",
        lambda: cluster.find("namespace", NAMESPACE) is None,
        timeout=timeout,
    )
