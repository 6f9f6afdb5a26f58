"""What the cluster looked like when a functional test failed: recent events, the pods that are not
plainly running, and the last log lines of pods that ended or restarted in the namespaces involved, then of
the pods running in the test's own namespaces (a server the test talked to, such as an exporter, logs
what it did with the request).

A flake in CI is seen once; this report, attached to the failure, is what is left to explain it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

# (args) -> (returncode, stdout); kubectl with the cluster's kubeconfig.
Kubectl = Callable[..., tuple[int, str]]

EVENT_LINES = 40
LOG_LINES = 30
MAX_LOGGED_PODS = 6
SYSTEM_NAMESPACES = ("kube-system", "kube-public", "kube-node-lease")
INSTALL_NAMESPACE = "kubevirt"  # its running components are many and log elsewhere


def report(kubectl: Kubectl, namespaces: Iterable[str]) -> str:
    """The report as text; a part that cannot be read says so instead."""
    wanted = sorted(set(namespaces))
    parts = [_section("recent events", _events(kubectl))]
    pods = _pods(kubectl)
    if pods is None:
        parts.append(_section("pods", "cannot list pods"))
        return "\n".join(parts)
    unusual = "\n".join(_pod_line(pod) for pod in pods if _unusual(pod))
    parts.append(_section("pods not plainly running", unusual))
    ended = [pod for pod in pods if _namespace(pod) in wanted and _ended_or_restarted(pod)]
    running = [
        pod
        for pod in pods
        if _namespace(pod) in wanted and _namespace(pod) != INSTALL_NAMESPACE and pod not in ended
    ]
    logged = ended + running
    for pod in logged[:MAX_LOGGED_PODS]:
        parts.append(_section(f"log of {_namespace(pod)}/{_name(pod)}", _logs(kubectl, pod)))
    return "\n".join(parts)


def _section(title: str, body: str) -> str:
    return f"--- {title} ---\n{body.rstrip() or '(none)'}\n"


def _events(kubectl: Kubectl) -> str:
    code, out = kubectl("get", "events", "-A", "--sort-by=.lastTimestamp")
    if code != 0:
        return "cannot list events"
    return "\n".join(out.splitlines()[-EVENT_LINES:])


def _pods(kubectl: Kubectl) -> list[dict[str, Any]] | None:
    code, out = kubectl("get", "pods", "-A", "-o", "json")
    if code != 0:
        return None
    try:
        items = json.loads(out).get("items") or []
    except ValueError:
        return None
    return [pod for pod in items if _namespace(pod) not in SYSTEM_NAMESPACES]


def _namespace(pod: dict[str, Any]) -> str:
    return str((pod.get("metadata") or {}).get("namespace") or "")


def _name(pod: dict[str, Any]) -> str:
    return str((pod.get("metadata") or {}).get("name") or "")


def _statuses(pod: dict[str, Any]) -> list[dict[str, Any]]:
    status = pod.get("status") or {}
    return [*(status.get("initContainerStatuses") or []), *(status.get("containerStatuses") or [])]


def _restarts(pod: dict[str, Any]) -> int:
    return sum(int(entry.get("restartCount") or 0) for entry in _statuses(pod))


def _phase(pod: dict[str, Any]) -> str:
    return str((pod.get("status") or {}).get("phase") or "")


def _ended_or_restarted(pod: dict[str, Any]) -> bool:
    return _phase(pod) in ("Succeeded", "Failed") or _restarts(pod) > 0


def _unusual(pod: dict[str, Any]) -> bool:
    deleting = bool((pod.get("metadata") or {}).get("deletionTimestamp"))
    return deleting or _phase(pod) != "Running" or _restarts(pod) > 0


def _pod_line(pod: dict[str, Any]) -> str:
    deleting = " deleting" if (pod.get("metadata") or {}).get("deletionTimestamp") else ""
    return f"{_namespace(pod)}/{_name(pod)} {_phase(pod)}{deleting} restarts={_restarts(pod)}"


def _logs(kubectl: Kubectl, pod: dict[str, Any]) -> str:
    lines = []
    for entry in _statuses(pod):
        container = str(entry.get("name") or "")
        args = ["logs", "-n", _namespace(pod), _name(pod), "-c", container, f"--tail={LOG_LINES}"]
        if int(entry.get("restartCount") or 0) > 0:
            args.append("--previous")
        code, out = kubectl(*args)
        lines.append(f"[{container}]")
        lines.append(out if code == 0 else "(no log)")
    return "\n".join(lines)
