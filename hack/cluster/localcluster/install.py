"""KubeVirt installed as its users install it: the release operator manifest, then a KubeVirt CR; the
operator does the rest. Removed in the reverse order: the CR (the operator uninstalls), then the manifest.

The CR is the release's with what this cluster needs set through the knobs every KubeVirt user has: images
are never pulled (they are built and imported locally), guests run under emulation, and launchers get
KubeVirt's seccomp profile.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
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
OPERATOR_IMAGE_VARIABLE = "VIRT_OPERATOR_IMAGE"
SECCOMP_GATE = "KubevirtSeccompProfile"
SECCOMP_PROFILE = "kubevirt/kubevirt.json"

JSON = dict[str, Any]
Progress = Callable[[str], None]


def _documents(path: Path) -> list[JSON]:
    return [d for d in yaml.safe_load_all(path.read_text()) if isinstance(d, dict)]


def operator_objects(tag: str | None = None) -> list[JSON]:
    """The release operator manifest with the operator's pods never pulling their image; ``tag`` names
    another release of the same images (an upgrade's target)."""
    objects = _documents(OPERATOR_MANIFEST)
    for obj in objects:
        if obj.get("kind") == "Deployment":
            for container in obj["spec"]["template"]["spec"]["containers"]:
                container["imagePullPolicy"] = "Never"
                if tag is not None:
                    container["image"] = _retagged(container["image"], tag)
                    for variable in container.get("env", []):
                        if variable["name"] == OPERATOR_IMAGE_VARIABLE:
                            variable["value"] = _retagged(variable["value"], tag)
    return objects


def _retagged(image: str, tag: str) -> str:
    return f"{image.rsplit(':', 1)[0]}:{tag}"


# The components whose /healthz reports the KubeVirt CR resourceVersion they run with, and how long a
# change may take to reach them all.
CONFIG_COMPONENTS = ("virt-api", "virt-controller", "virt-handler")
CONFIG_TIMEOUT = 60.0


def kubevirt_cr() -> JSON:
    """The release CR with emulation on (KVM guests hang on this kind of machine) and images never pulled.
    Launchers run non-root, KubeVirt's default, under KubeVirt's seccomp profile."""
    (cr,) = [d for d in _documents(CR_MANIFEST) if d.get("kind") == "KubeVirt"]
    spec = cr.setdefault("spec", {})
    spec["imagePullPolicy"] = "Never"
    developer = spec.setdefault("configuration", {}).setdefault("developerConfiguration", {})
    developer["useEmulation"] = True
    # KubeVirt's seccomp profile for launchers: virt-handler installs it under the kubelet's seccomp
    # directory while the gate is on, and launcher pods name it.
    gates = developer.get("featureGates") or []
    developer["featureGates"] = [*gates, *([] if SECCOMP_GATE in gates else [SECCOMP_GATE])]
    spec["configuration"]["seccompConfiguration"] = {
        "virtualMachineInstanceProfile": {"customProfile": {"localhostProfile": SECCOMP_PROFILE}}
    }
    return cr


def install_operator(cluster: Cluster, tag: str | None = None) -> None:
    """Applies the release operator manifest (of the release ``tag`` names, when given: an upgrade)."""
    # Server-side: the KubeVirt CRD is larger than client-side apply's last-applied annotation allows.
    cluster.kubectl(
        "apply",
        "--server-side",
        "--force-conflicts",
        "-f",
        "-",
        stdin=yaml.safe_dump_all(operator_objects(tag)),
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


def kubevirt_crds(cluster: Cluster) -> list[JSON]:
    """The KubeVirt CRDs present now, stripped so that they can be created again."""
    found = cluster.kubectl_json("get", "crd")["items"]
    assert isinstance(found, list)
    kept = []
    for crd in found:
        if not crd["spec"]["group"].endswith("kubevirt.io"):
            continue
        metadata = crd["metadata"]
        crd["metadata"] = {k: metadata[k] for k in ("name", "labels", "annotations") if k in metadata}
        crd.pop("status", None)
        kept.append(crd)
    return kept


@contextmanager
def installed(cluster: Cluster, cr: JSON | None = None, *, timeout: float = 420.0) -> Iterator[float]:
    """KubeVirt installed from the release manifests (with ``cr``, by default :func:`kubevirt_cr`) for the
    length of the block; yields the seconds the CR took to be Deployed. Afterwards it is uninstalled and
    the KubeVirt CRDs that were there before (applied by tests that deploy components by hand) are created
    again."""
    if cluster.find("crd", "kubevirts.kubevirt.io") is not None and kubevirt(cluster) is not None:
        raise RuntimeError("a KubeVirt CR exists already: something else installed KubeVirt on this cluster")
    crds_before = kubevirt_crds(cluster)
    namespace_before = cluster.find("namespace", NAMESPACE) is not None
    began = time.monotonic()
    try:
        install_operator(cluster)
        create_kubevirt(cluster, cr or kubevirt_cr())
        wait_deployed(cluster, timeout=timeout, progress=lambda line: None)
        yield time.monotonic() - began
    finally:
        uninstall(cluster)
        cluster.wait_until("KubeVirt's CRDs are gone", lambda: kubevirt_crds(cluster) == [], timeout=120)
        if crds_before:
            restored = {"apiVersion": "v1", "kind": "List", "items": crds_before}
            cluster.kubectl("create", "-f", "-", stdin=json.dumps(restored))
        if namespace_before:
            cluster.kubectl("create", "namespace", NAMESPACE, check=False)


@contextmanager
def present(cluster: Cluster, progress: Progress = print) -> Iterator[None]:
    """KubeVirt for the length of the block, as the benchmarks want it: the one installed on the cluster,
    or one installed (through virt-operator) for the block alone."""
    if kubevirt(cluster) is not None:
        progress("using the KubeVirt installed on this cluster")
        yield
        return
    progress("installing KubeVirt through virt-operator (it is removed again afterwards)")
    with installed(cluster):
        yield


@contextmanager
def feature_gates(cluster: Cluster, *gates: str) -> Iterator[None]:
    """``gates`` added to the installed KubeVirt CR's developerConfiguration for the length of the block,
    then the CR's gates as they were."""
    before = list(_developer_configuration(cluster).get("featureGates") or [])
    with developer_configuration(cluster, featureGates=[*before, *(g for g in gates if g not in before)]):
        yield


@contextmanager
def developer_configuration(cluster: Cluster, **fields: object) -> Iterator[None]:
    """``fields`` set in the installed KubeVirt CR's developerConfiguration for the length of the block,
    then as they were (a field that was not set is removed again)."""
    developer = _developer_configuration(cluster)
    before = {name: developer.get(name) for name in fields}
    _set_developer_configuration(cluster, fields)
    try:
        yield
    finally:
        _set_developer_configuration(cluster, before)


def _developer_configuration(cluster: Cluster) -> JSON:
    cr = kubevirt(cluster)
    if cr is None:
        raise RuntimeError("no KubeVirt CR to configure")
    developer: JSON = cr["spec"].get("configuration", {}).get("developerConfiguration", {})
    return developer


def _set_developer_configuration(cluster: Cluster, fields: dict[str, object]) -> None:
    """Merges ``fields`` (None removes one) into the CR's developerConfiguration and waits until the
    components run with it (a webhook that has not seen a gate yet refuses what it guards)."""
    _patch_cr(cluster, {"spec": {"configuration": {"developerConfiguration": fields}}})


@contextmanager
def spec_fields(cluster: Cluster, **fields: object) -> Iterator[None]:
    """Fields of the installed KubeVirt CR's spec (``configuration`` is one) set for the length of the
    block, then as they were; the components run with each change before it counts as made."""
    cr = kubevirt(cluster)
    if cr is None:
        raise RuntimeError("no KubeVirt CR to configure")
    before = {name: cr["spec"].get(name) for name in fields}
    _patch_cr(cluster, {"spec": fields})
    try:
        yield
    finally:
        _patch_cr(cluster, {"spec": before})


def _patch_cr(cluster: Cluster, patch: JSON) -> None:
    """Merge-patches the KubeVirt CR and waits until the components report running with the change."""
    patched = cluster.kubectl_json(
        "patch", "kubevirt", CR_NAME, "-n", NAMESPACE, "--type=merge", "-p", json.dumps(patch)
    )
    version = int(patched["metadata"]["resourceVersion"])  # type: ignore[index]
    reported: dict[str, object] = {}

    def seen() -> bool:
        reported.update(config_versions(cluster, config_pods(cluster)))
        return all(runs_with(value, version) for value in reported.values())

    try:
        cluster.wait_until("the components run with the new configuration", seen, CONFIG_TIMEOUT)
    except AssertionError as error:
        raise AssertionError(f"{error}: resourceVersion {version}, reported {reported}") from error


def config_pods(cluster: Cluster) -> dict[str, str]:
    """The running pods of the components that report their configuration: pod name → component."""
    listed = cluster.kubectl_json("get", "pods", "-n", NAMESPACE)["items"]
    pods: list[JSON] = listed if isinstance(listed, list) else []
    found = {}
    for pod in pods:
        label = pod["metadata"].get("labels", {}).get("kubevirt.io", "")
        if label in CONFIG_COMPONENTS and pod["status"].get("phase") == "Running":
            found[str(pod["metadata"]["name"])] = str(label)
    return found


def config_versions(cluster: Cluster, pods: dict[str, str]) -> dict[str, object]:
    """The KubeVirt CR resourceVersion each pod's ``/healthz`` says it runs with (or what it answered)."""
    reported: dict[str, object] = {}
    for pod in pods:
        path = f"/api/v1/namespaces/{NAMESPACE}/pods/https:{pod}:8443/proxy/healthz"
        answer = cluster.kubectl("get", "--raw", path, check=False)
        body = json.loads(answer.stdout) if answer.returncode == 0 else {"error": answer.stderr.strip()}
        reported[pod] = body.get("config-resource-version", body)
    return reported


def runs_with(value: object, version: int) -> bool:
    """Whether a reported CR resourceVersion is ``version`` or later (the operator may write the CR's
    status after a change)."""
    return str(value).isdigit() and int(str(value)) >= version
