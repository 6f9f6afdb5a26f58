"""A real Prometheus beside the local cluster, set up the way prometheus-operator would set it up from
KubeVirt's own ServiceMonitor and PrometheusRule.

There is no prometheus-operator here (its source is not served), so this module plays its part:

- it installs stand-ins for the ``monitoring.coreos.com`` CRDs (same group, kinds and version), the
  ``monitoring`` namespace and the ``prometheus-k8s`` account, which is what makes virt-operator install
  KubeVirt's ServiceMonitor, PrometheusRule and RBAC, as on a cluster with the Prometheus stack;
- it turns every ServiceMonitor into a scrape job with Kubernetes service discovery (endpoint slices), the
  relabelling prometheus-operator generates (``namespace``, ``service``, ``pod``, ``container``, ``job``,
  ``endpoint``), and every PrometheusRule into a rule file;
- it runs Prometheus and kube-state-metrics (hack/cluster/build-monitoring) on the host, recorded with the
  cluster's processes (so cluster-down stops them). Prometheus scrapes the pods over the pod bridge and
  kube-state-metrics (the ``kube_*`` series KubeVirt's rules read, with the node and claim labels they
  match on).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from . import processes
from .handle import Cluster
from .layout import REPO
from .readiness import url_ok, wait_for

JSON = dict[str, Any]

BUILD_MONITORING = REPO / "hack" / "cluster" / "build-monitoring"
PROCESS_NAME = "prometheus"
PORT = 9090
URL = f"http://127.0.0.1:{PORT}"
KSM_PROCESS_NAME = "kube-state-metrics"
KSM_PORT = 9091
KSM_TELEMETRY_PORT = 9092
# Only what KubeVirt's rules and alerts read, and the labels they match on.
KSM_RESOURCES = "daemonsets,deployments,nodes,persistentvolumeclaims,pods"
KSM_LABELS = (
    "nodes=[kubevirt.io/schedulable],"
    "persistentvolumeclaims=[restore.kubevirt.io/source-vm-name,restore.kubevirt.io/source-vm-namespace]"
)
MONITORING_NAMESPACE = "monitoring"
MONITOR_ACCOUNT = "prometheus-k8s"
# Shorter than a production setup's 30 s, so that tests and a look at a fresh VM see series quickly.
SCRAPE_INTERVAL = "10s"
EVALUATION_INTERVAL = "10s"
MONITORING_CRDS = (("servicemonitors", "ServiceMonitor"), ("prometheusrules", "PrometheusRule"))


class MonitoringError(Exception):
    """Prometheus or the monitoring objects could not be set up or read."""


def monitoring_crd(plural: str, kind: str) -> JSON:
    """A stand-in for prometheus-operator's CRD: the same group, kind and version, any content."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.monitoring.coreos.com"},
        "spec": {
            "group": "monitoring.coreos.com",
            "scope": "Namespaced",
            "names": {"plural": plural, "singular": kind.lower(), "kind": kind, "listKind": f"{kind}List"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
                    },
                }
            ],
        },
    }


def install_monitoring_stack(cluster: Cluster) -> None:
    """The CRDs, namespace and account a Prometheus stack brings (idempotent)."""
    crds = [monitoring_crd(plural, kind) for plural, kind in MONITORING_CRDS]
    account: JSON = {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": MONITOR_ACCOUNT, "namespace": MONITORING_NAMESPACE},
    }
    namespace: JSON = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": MONITORING_NAMESPACE}}
    cluster.apply(*crds, namespace)
    cluster.kubectl("wait", "--for=condition=Established", "--timeout=60s", "crd", *_crd_names())
    cluster.apply(account)


def remove_monitoring_stack(cluster: Cluster) -> None:
    cluster.kubectl(
        "delete", "namespace", MONITORING_NAMESPACE, "--ignore-not-found", "--wait=true", check=False
    )
    cluster.kubectl("delete", "crd", *_crd_names(), "--ignore-not-found", check=False)


def _crd_names() -> list[str]:
    return [f"{plural}.monitoring.coreos.com" for plural, _ in MONITORING_CRDS]


# --- prometheus-operator's translation --------------------------------------------------------------

_INVALID_LABEL_CHARACTERS = re.compile(r"[^a-zA-Z0-9_]")


def _meta_label(label: str) -> str:
    """The name Kubernetes discovery gives a Kubernetes label in its meta labels."""
    return _INVALID_LABEL_CHARACTERS.sub("_", label)


def _selector_relabelling(selector: Mapping[str, Any], where: str) -> list[JSON]:
    expressions = selector.get("matchExpressions") or []
    if expressions:
        raise MonitoringError(f"{where}.matchExpressions: not supported here, only matchLabels")
    return [
        {
            "action": "keep",
            "source_labels": [
                f"__meta_kubernetes_service_label_{_meta_label(key)}",
                f"__meta_kubernetes_service_labelpresent_{_meta_label(key)}",
            ],
            "regex": f"({re.escape(str(value))});true",
        }
        for key, value in sorted((selector.get("matchLabels") or {}).items())
    ]


def _target_labels(port: str) -> list[JSON]:
    copied = (
        ("__meta_kubernetes_namespace", "namespace"),
        ("__meta_kubernetes_service_name", "service"),
        ("__meta_kubernetes_pod_name", "pod"),
        ("__meta_kubernetes_pod_container_name", "container"),
        ("__meta_kubernetes_service_name", "job"),
    )
    return [
        *({"source_labels": [source], "target_label": target} for source, target in copied),
        {"target_label": "endpoint", "replacement": port},
    ]


def scrape_configs(monitor: Mapping[str, Any], kubeconfig: Path) -> list[JSON]:
    """One scrape job per endpoint of a ServiceMonitor, as prometheus-operator writes them."""
    metadata, spec = monitor.get("metadata") or {}, monitor.get("spec") or {}
    namespace, name = metadata.get("namespace", ""), metadata.get("name", "")
    where = f"servicemonitor {namespace}/{name}: spec"
    names = (spec.get("namespaceSelector") or {}).get("matchNames") or [namespace]
    selecting = _selector_relabelling(spec.get("selector") or {}, f"{where}.selector")
    jobs = []
    for index, endpoint in enumerate(spec.get("endpoints") or []):
        port = endpoint.get("port")
        if not port:
            raise MonitoringError(f"{where}.endpoints[{index}].port: only named ports are supported here")
        job: JSON = {
            "job_name": f"serviceMonitor/{namespace}/{name}/{index}",
            "honor_labels": bool(endpoint.get("honorLabels", False)),
            "scheme": endpoint.get("scheme", "http"),
            "metrics_path": endpoint.get("path", "/metrics"),
            "kubernetes_sd_configs": [
                {"role": "endpointslice", "kubeconfig_file": str(kubeconfig), "namespaces": {"names": names}}
            ],
            "relabel_configs": [
                *selecting,
                {
                    "action": "keep",
                    "source_labels": ["__meta_kubernetes_endpointslice_port_name"],
                    "regex": re.escape(port),
                },
                *_target_labels(port),
            ],
        }
        if endpoint.get("interval"):
            job["scrape_interval"] = endpoint["interval"]
        tls = endpoint.get("tlsConfig") or {}
        if tls.get("insecureSkipVerify"):
            job["tls_config"] = {"insecure_skip_verify": True}
        jobs.append(job)
    return jobs


def rule_file(rule: Mapping[str, Any]) -> str:
    """A PrometheusRule's groups as a Prometheus rule file."""
    return yaml.safe_dump({"groups": (rule.get("spec") or {}).get("groups") or []}, sort_keys=False)


def cluster_jobs() -> list[JSON]:
    """What a Prometheus stack scrapes besides ServiceMonitors' targets: kube-state-metrics. (The
    kubelets' cAdvisor is left out: it cannot name the local cluster's containers, whose containerd is not
    where cAdvisor looks, so KubeVirt's container-memory rules would find nothing in it anyway.)"""
    return [
        {
            "job_name": "kube-state-metrics",
            "honor_labels": True,
            "static_configs": [{"targets": [f"127.0.0.1:{KSM_PORT}"]}],
        }
    ]


def configuration(
    monitors: list[JSON], rule_paths: list[Path], kubeconfig: Path, extra_jobs: list[JSON] | None = None
) -> JSON:
    return {
        "global": {"scrape_interval": SCRAPE_INTERVAL, "evaluation_interval": EVALUATION_INTERVAL},
        "rule_files": [str(path) for path in rule_paths],
        "scrape_configs": [
            *(job for monitor in monitors for job in scrape_configs(monitor, kubeconfig)),
            *(extra_jobs or []),
        ],
    }


# --- running it ---------------------------------------------------------------------------------------


def monitoring_binaries() -> Path:
    """The directory of the built prometheus and kube-state-metrics (built once; a cached build returns
    at once)."""
    result = subprocess.run([str(BUILD_MONITORING)], capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise MonitoringError(f"building Prometheus failed: {result.stderr.strip()[-2000:]}")
    return Path(result.stdout.strip().splitlines()[-1])


def _items(cluster: Cluster, kind: str) -> list[JSON]:
    items = cluster.kubectl_json("get", kind, "--all-namespaces").get("items") or []
    assert isinstance(items, list)
    return items


def wait_for_kubevirt_objects(cluster: Cluster, timeout: float = 180.0) -> tuple[list[JSON], list[JSON]]:
    """The cluster's ServiceMonitors and PrometheusRules, once virt-operator has installed its own."""
    deadline = time.monotonic() + timeout
    while True:
        monitors, rules = _items(cluster, "servicemonitors"), _items(cluster, "prometheusrules")
        if monitors and rules:
            return monitors, rules
        if time.monotonic() > deadline:
            raise MonitoringError(
                f"no ServiceMonitor and PrometheusRule after {timeout:.0f} s: is KubeVirt installed "
                f"(and does the {MONITORING_NAMESPACE} namespace hold the {MONITOR_ACCOUNT} account)?"
            )
        time.sleep(1.0)


def write_configuration(cluster: Cluster, directory: Path) -> Path:
    """Prometheus's configuration and rule files from the cluster's monitoring objects; returns the
    configuration's path."""
    monitors, rules = wait_for_kubevirt_objects(cluster)
    rules_dir = directory / "rules"
    rules_dir.mkdir(parents=True, exist_ok=True)
    for old in rules_dir.glob("*.yaml"):
        old.unlink()
    rule_paths = []
    for rule in rules:
        metadata = rule.get("metadata") or {}
        path = rules_dir / f"{metadata.get('namespace')}-{metadata.get('name')}.yaml"
        path.write_text(rule_file(rule))
        rule_paths.append(path)
    config = directory / "prometheus.yml"
    extra_jobs = cluster_jobs()
    config.write_text(
        yaml.safe_dump(configuration(monitors, rule_paths, cluster.kubeconfig, extra_jobs), sort_keys=False)
    )
    return config


def _directory(cluster: Cluster) -> Path:
    return cluster.layout.run / "prometheus"


def _record(cluster: Cluster, name: str) -> processes.Record | None:
    found = [r for r in processes.recorded(cluster.layout.pids) if r.name == name]
    return found[0] if found and processes.alive(found[0]) else None


def _start_kube_state_metrics(cluster: Cluster, binary: Path) -> None:
    if _record(cluster, KSM_PROCESS_NAME) is not None:
        return
    record = processes.start(
        KSM_PROCESS_NAME,
        [
            str(binary),
            f"--kubeconfig={cluster.kubeconfig}",
            "--host=127.0.0.1",
            f"--port={KSM_PORT}",
            "--telemetry-host=127.0.0.1",
            f"--telemetry-port={KSM_TELEMETRY_PORT}",
            f"--resources={KSM_RESOURCES}",
            f"--metric-labels-allowlist={KSM_LABELS}",
        ],
        pid_dir=cluster.layout.pids,
        log_dir=cluster.layout.logs,
    )
    wait_for(
        KSM_PROCESS_NAME,
        lambda: url_ok(f"http://127.0.0.1:{KSM_PORT}/healthz"),
        timeout=60,
        alive=lambda: processes.alive(record),
    )


def start(cluster: Cluster) -> Prometheus:
    """kube-state-metrics and Prometheus running for the cluster, Prometheus with a configuration read
    from it now (a running one is reconfigured in place and keeps its samples)."""
    binaries = monitoring_binaries()
    directory = _directory(cluster)
    config = write_configuration(cluster, directory)
    _start_kube_state_metrics(cluster, binaries / "kube-state-metrics")
    server = Prometheus(URL)
    if _record(cluster, PROCESS_NAME) is not None:
        server.reload()
        return server
    # A new Prometheus starts empty: samples of a stopped one would outlive their pods by the 5 min
    # lookback, as nothing marked them stale when it stopped.
    shutil.rmtree(directory / "data", ignore_errors=True)
    record = processes.start(
        PROCESS_NAME,
        [
            str(binaries / "prometheus"),
            f"--config.file={config}",
            f"--storage.tsdb.path={directory / 'data'}",
            f"--web.listen-address=127.0.0.1:{PORT}",
            "--web.enable-lifecycle",
            "--storage.tsdb.retention.time=1d",
        ],
        pid_dir=cluster.layout.pids,
        log_dir=cluster.layout.logs,
    )
    wait_for("prometheus", server.ready, timeout=60, alive=lambda: processes.alive(record))
    return server


def stop(cluster: Cluster) -> bool:
    """Stops the cluster's Prometheus and kube-state-metrics; returns whether Prometheus was running."""
    was_running = False
    for name in (PROCESS_NAME, KSM_PROCESS_NAME):
        record = _record(cluster, name)
        if record is not None:
            processes.stop(record)
            was_running = was_running or name == PROCESS_NAME
        processes.forget(cluster.layout.pids, name)
    return was_running


@contextmanager
def monitoring(cluster: Cluster) -> Iterator[Prometheus]:
    """The monitoring stack and Prometheus for a block (KubeVirt installed); both removed after it."""
    install_monitoring_stack(cluster)
    try:
        yield start(cluster)
    finally:
        stop(cluster)
        remove_monitoring_stack(cluster)


# --- its HTTP API -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Series:
    labels: Mapping[str, str]
    points: list[tuple[float, float]]  # (unix time, value)


@dataclass(frozen=True)
class Prometheus:
    url: str

    def ready(self) -> bool:
        return url_ok(f"{self.url}/-/ready")

    def reload(self) -> None:
        request = urllib.request.Request(f"{self.url}/-/reload", method="POST")
        with urllib.request.urlopen(request, timeout=30):
            pass

    def api(self, path: str, **params: str) -> Any:
        """The ``data`` of an ``/api/v1/`` answer; a refused query raises with Prometheus's error."""
        url = f"{self.url}/api/v1/{path}" + (f"?{urllib.parse.urlencode(params)}" if params else "")
        try:
            with urllib.request.urlopen(url, timeout=30) as response:
                answer = json.load(response)
        except urllib.error.HTTPError as error:
            answer = json.load(error)
        except (urllib.error.URLError, OSError) as error:
            raise MonitoringError(f"Prometheus at {self.url} does not answer: {error}") from None
        if answer.get("status") != "success":
            raise MonitoringError(f"{path} {params}: {answer.get('errorType')}: {answer.get('error')}")
        return answer["data"]

    def query(self, expr: str) -> list[Series]:
        """An instant query's vector."""
        data = self.api("query", query=expr)
        return [
            Series(item["metric"], [(float(item["value"][0]), float(item["value"][1]))])
            for item in data.get("result") or []
        ]

    def query_range(self, expr: str, start: float, end: float, step: float) -> list[Series]:
        data = self.api("query_range", query=expr, start=str(start), end=str(end), step=str(step))
        return [
            Series(item["metric"], [(float(t), float(v)) for t, v in item["values"]])
            for item in data.get("result") or []
        ]

    def active_targets(self) -> list[JSON]:
        targets = self.api("targets", state="active").get("activeTargets") or []
        return list(targets)

    def rule_groups(self) -> list[JSON]:
        return list(self.api("rules").get("groups") or [])

    def alerts(self) -> list[JSON]:
        return list(self.api("alerts").get("alerts") or [])
