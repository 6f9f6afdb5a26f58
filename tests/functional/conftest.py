"""The functional tier runs against a real cluster (hack/cluster-up), single-node unless a module asks
for the second node through ``two_node_cluster``.

The session fixture uses a cluster that is already running, or brings one up; a cluster that test sessions
brought up is torn down by the last session to finish (also when tests fail), which then checks that
nothing of it is left on the host. The project's images are (re)built from the cache and imported either way.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
HACK = REPO / "hack"
sys.path.insert(0, str(HACK / "cluster"))

from localcluster import cluster as localcluster  # noqa: E402
from localcluster import sharing  # noqa: E402
from localcluster.handle import Cluster  # noqa: E402
from localcluster.layout import Layout, requested_nodes  # noqa: E402

from kubevirt_testing import failure_report  # noqa: E402

GENERATED = REPO / "manifests" / "generated"
REQUIRED_CRDS = ("virtualmachines.kubevirt.io", "virtualmachineinstances.kubevirt.io")

# Images the functional tests run (built from the cache; a cold build takes a few minutes).
TEST_IMAGES = (
    "cdi-controller",
    "cdi-importer",
    "cdi-apiserver",
    "cdi-uploadproxy",
    "cdi-uploadserver",
    "cdi-cloner",
    "virt-api",
    "virt-controller",
    "virt-exportproxy",
    "virt-exportserver",
    "virt-handler",
    "virt-launcher",
    "virt-operator",
    "test-guest-container-disk",
    "test-guest-kernel-boot",
    "test-guest-cirros-compatible",
    "test-guest-alpine-compatible",
    "test-guest-fedora-compatible",
    "test-image-server",
)


def _run_hack(script: str, *args: str) -> None:
    began = time.monotonic()
    result = subprocess.run(["bash", str(HACK / script), *args], capture_output=True, text=True, check=False)
    sys.stderr.write(result.stdout + result.stderr)
    sys.stderr.write(f"{script}: {time.monotonic() - began:.1f} s\n")
    if result.returncode != 0:
        raise RuntimeError(f"hack/{script} failed ({result.returncode}):\n{result.stdout}\n{result.stderr}")


def _leave(layout: Layout) -> None:
    """Stops the cluster if test sessions started it and this is the last one using it, and checks that
    nothing of it is left on the host."""
    with sharing.locked(sharing.cluster_lock(layout)):
        if not sharing.leave(layout) or os.environ.get("KUBEVIRT_KEEP_CLUSTER"):
            return
        left = localcluster.down(layout)
    assert left == [], f"cluster-down left {left}"


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """A failed test's report carries the cluster's state (events, odd pods, their logs): a CI flake
    is seen once, and this is what is left to explain it."""
    report = yield
    funcargs = getattr(item, "funcargs", {})
    cluster = funcargs.get("cluster") or funcargs.get("two_node_cluster")
    if call.when != "call" or not report.failed or not isinstance(cluster, Cluster):
        return report
    namespaces = [value for value in funcargs.values() if isinstance(value, str) and value.startswith("ft-")]

    def kubectl(*args: str) -> tuple[int, str]:
        try:
            done = cluster.kubectl(*args, check=False, timeout=30)
        except subprocess.TimeoutExpired:
            return 1, ""
        return done.returncode, done.stdout

    report.sections.append(("cluster state", failure_report.report(kubectl, [*namespaces, "kubevirt"])))
    return report


@pytest.fixture(scope="session")
def cluster() -> Iterator[Cluster]:
    layout = Layout.from_environment()
    _run_hack("setup.d/30-cluster.sh")
    _run_hack("cluster/build-kubernetes")
    with sharing.locked(sharing.cluster_lock(layout)):
        started = not localcluster.running(layout)
        try:
            localcluster.up(layout, requested_nodes())  # a running cluster gets the nodes it lacks
        except RuntimeError:
            if started:
                localcluster.down(layout)
            raise
        if started:
            sharing.mark_started_by_tests(layout)
        sharing.join(layout)
    try:
        _run_hack("build-images", *TEST_IMAGES)
        yield Cluster(layout)
    finally:
        _leave(layout)


@pytest.fixture(scope="module")
def two_node_cluster(cluster: Cluster) -> Iterator[Cluster]:
    """The shared cluster with its second node (hack/cluster-up --nodes 2) for a module. A node this
    fixture added is removed after the module (unless KUBEVIRT_CLUSTER_NODES asks for two), so other
    modules keep the single node they expect."""
    layout = cluster.layout
    node = layout.node(2)
    with sharing.locked(sharing.cluster_lock(layout)):
        added = not localcluster.node_running(node)
        began = time.monotonic()
        localcluster.up(layout, nodes=2)
    sys.stderr.write(f"node {node.name}: {'added in' if added else 'already running,'} ")
    sys.stderr.write(f"{time.monotonic() - began:.1f} s\n")
    try:
        yield cluster
    finally:
        if added and requested_nodes() < 2:
            with sharing.locked(sharing.cluster_lock(layout)):
                left = localcluster.remove_node(node)
            assert left == [], f"removing {node.name} left {left}"


@pytest.fixture
def namespace(cluster: Cluster, request: pytest.FixtureRequest) -> Iterator[str]:
    """A namespace of its own per test, deleted afterwards (without waiting)."""
    # Parametrized tests share a stem: the digest of the test's id keeps their namespaces apart.
    stem = re.sub(r"[^a-z0-9]+", "-", request.node.name.lower())[:32].strip("-")
    digest = hashlib.sha1(request.node.nodeid.encode()).hexdigest()[:6]
    name = f"ft-{stem}-{digest}-{os.getpid() % 10000}"
    cluster.kubectl("create", "namespace", name)
    deadline = time.monotonic() + 30
    while cluster.kubectl("get", "serviceaccount", "default", "-n", name, check=False).returncode != 0:
        assert time.monotonic() < deadline, f"namespace {name}: no default service account"
        time.sleep(0.2)
    yield name
    cluster.kubectl("delete", "namespace", name, "--wait=false", check=False)


def _generated_crds() -> list[dict[str, object]]:
    crds = []
    for path in sorted(GENERATED.rglob("*.yaml")) + sorted(GENERATED.rglob("*.json")):
        text = path.read_text()
        documents = [json.loads(text)] if path.suffix == ".json" else list(yaml.safe_load_all(text))
        crds += [d for d in documents if isinstance(d, dict) and d.get("kind") == "CustomResourceDefinition"]
    return crds


@pytest.fixture(scope="module")
def crds(cluster: Cluster) -> list[str]:
    """The generated CRDs (manifests/generated), applied and Established; yields their names."""
    found = _generated_crds()
    names = [str(crd["metadata"]["name"]) for crd in found]  # type: ignore[index]
    missing = [name for name in REQUIRED_CRDS if name not in names]
    assert not missing, f"{GENERATED}: no CustomResourceDefinition for {missing} (hack/generate makes them)"
    cluster.kubectl("apply", "--server-side", "--force-conflicts", "-f", "-", stdin=yaml.safe_dump_all(found))
    for name in names:
        cluster.kubectl("wait", "--for=condition=Established", "--timeout=60s", f"crd/{name}")
    return names
