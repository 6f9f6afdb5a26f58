"""hack/bench-density's pure parts: the request counters, the timeline of one VMI, the fault-run checks,
the process accounting and the objects it creates."""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "hack" / "cluster"))

from localcluster.density import apimetrics, faults, procs, report, timeline, workload  # noqa: E402

JSON = dict[str, Any]

METRICS = """\
# HELP apiserver_request_total Counter of apiserver requests
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="",verb="PATCH",version="v1"} 4
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="status",verb="PATCH",version="v1"} 2
apiserver_request_total{code="409",component="apiserver",dry_run="",group="kubevirt.io",resource="virtualmachineinstances",scope="resource",subresource="",verb="PUT",version="v1"} 1e+01
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="",scope="",subresource="",verb="GET",version=""} 7
apiserver_request_duration_seconds_bucket{verb="GET",le="0.1"} 3
"""  # noqa: E501


def test_request_counts_sum_codes_by_verb_and_resource() -> None:
    counts = apimetrics.parse(METRICS)
    assert counts == Counter(
        {
            ("PATCH", "pods"): 4,
            ("PATCH", "pods/status"): 2,
            ("PUT", "virtualmachineinstances"): 10,
            ("GET", ""): 7,
        }
    )


def test_failed_requests_are_counted_by_code() -> None:
    assert apimetrics.parse(METRICS, failed=True) == Counter({("PUT", "virtualmachineinstances 409"): 10})


def test_requests_per_object_leave_out_the_benchmarks_own() -> None:
    before = Counter({("POST", "virtualmachineinstances"): 1, ("PATCH", "pods"): 2})
    after = Counter({("POST", "virtualmachineinstances"): 5, ("PATCH", "pods"): 6, ("GET", ""): 1})
    own = Counter({("POST", "virtualmachineinstances"): 4, ("GET", ""): 1})
    assert apimetrics.per_object(before, after, own, objects=4) == {"PATCH pods": 1.0}


def _log(*entries: tuple[str, str]) -> str:
    lines = [json.dumps({"component": "virt-launcher", "msg": msg, "timestamp": at}) for msg, at in entries]
    return "\n".join(["not json", *lines])


def test_launcher_log_marks_take_the_first_line_of_each_step() -> None:
    log = _log(
        ("libvirtd started", "2026-12-01T10:00:00.000000Z"),
        ("Marked as ready", "2026-12-01T10:00:01.500000Z"),
        ("preparing the domain", "2026-12-01T10:00:02.000000Z"),
        ("domain defined", "2026-12-01T10:00:02.250000Z"),
        ("domain started", "2026-12-01T10:00:03.000000Z"),
        ("domain defined", "2026-12-01T10:09:00.000000Z"),
    )
    marks = timeline.launcher_log_marks(log)
    ready = timeline.parse_time("2026-12-01T10:00:01.5Z")
    assert marks["launcher_ready"] == ready
    assert marks["defined"] - marks["sync_received"] == 0.25
    assert marks["started"] - ready == 1.5
    assert marks["first_log"] == timeline.parse_time("2026-12-01T10:00:00Z")
    assert set(marks) == {"first_log", "launcher_ready", "sync_received", "defined", "started"}


def test_container_starts_read_running_and_finished_containers() -> None:
    pod = {
        "status": {
            "initContainerStatuses": [
                {
                    "name": "container-disk-binary",
                    "state": {"terminated": {"startedAt": "2026-12-01T10:00:01Z"}},
                },
                {"name": "volumecontainerdisk-init", "state": {"waiting": {}}},
            ],
            "containerStatuses": [
                {"name": "compute", "state": {"running": {"startedAt": "2026-12-01T10:00:05Z"}}}
            ],
        }
    }
    starts = timeline.container_starts(pod)
    assert starts == {
        "container-disk-binary": timeline.parse_time("2026-12-01T10:00:01Z"),
        "compute": timeline.parse_time("2026-12-01T10:00:05Z"),
    }


def test_phases_measure_each_step_from_the_one_before() -> None:
    marks = timeline.Marks()
    steps = ["create_sent", "create_returned", "pod_created", "pod_scheduled", "compute_running"]
    for offset, step in enumerate(steps):
        marks.mark(step, 100.0 + offset * 2)
    marks.mark("create_sent", 0.0)  # the first mark of a step stays
    phases = marks.phases()
    assert phases["admission"] == 2.0
    assert phases["scheduling"] == 2.0
    assert phases["pod start (sandbox, init containers)"] == 2.0
    assert phases["launcher ready"] is None  # not reached


def test_median_is_the_middle_creation_to_running_time() -> None:
    def marks(seconds: float) -> timeline.Marks:
        m = timeline.Marks()
        m.mark("create_sent", 10.0)
        m.mark("running", 10.0 + seconds)
        return m

    unfinished = timeline.Marks()
    unfinished.mark("create_sent", 1.0)
    found = {"a": marks(9.0), "b": marks(3.0), "c": marks(5.0), "d": unfinished}
    assert timeline.median(found) == "c"
    assert timeline.median({"d": unfinished}) is None


def _vmi(name: str, phase: str, uid: str | None = None, transitions: list[str] | None = None) -> JSON:
    history = transitions if transitions is not None else ["Pending", "Scheduling", "Scheduled", phase]
    return {
        "metadata": {"name": name, "uid": uid or f"uid-{name}"},
        "status": {"phase": phase, "phaseTransitionTimestamps": [{"phase": p} for p in history]},
    }


def _pod(vmi: str, pod_uid: str, phase: str = "Running", vmi_uid: str | None = None) -> JSON:
    labels = {"kubevirt.io/created-by": vmi_uid or f"uid-{vmi}", "vm.kubevirt.io/name": vmi}
    return {"metadata": {"uid": pod_uid, "labels": labels}, "status": {"phase": phase}}


def _running(*pods: str) -> dict[str, Counter[str]]:
    return {pod: Counter({"virt-launcher": 1, "libvirtd": 1, "qemu-system-x86_64": 1}) for pod in pods}


def test_a_clean_fault_run_passes() -> None:
    verdict = faults.check(
        vmis={"a": _vmi("a", "Running"), "b": _vmi("b", "Failed")},
        pods=[_pod("a", "p-a"), _pod("b", "p-b", phase="Failed")],
        killed_vmi="b",
        killed_uid="uid-b",
        restarted_by_vm=False,
        processes=_running("p-a"),
    )
    assert verdict.ok, verdict.problems
    assert verdict.facts == {"vmis": 2, "running": 1, "active_pods": 1, "qemu_processes": 1}


def test_a_vm_must_run_its_killed_vmi_again_under_a_new_uid() -> None:
    restarted = faults.check(
        vmis={"a": _vmi("a", "Running", uid="new")},
        pods=[_pod("a", "p-old", phase="Failed", vmi_uid="old"), _pod("a", "p-new", vmi_uid="new")],
        killed_vmi="a",
        killed_uid="old",
        restarted_by_vm=True,
        processes=_running("p-new"),
    )
    assert restarted.ok, restarted.problems
    not_restarted = faults.check(
        vmis={"a": _vmi("a", "Failed", uid="old")},
        pods=[_pod("a", "p-old", phase="Failed", vmi_uid="old")],
        killed_vmi="a",
        killed_uid="old",
        restarted_by_vm=True,
        processes={},
    )
    assert not_restarted.problems == ["a: its launcher was killed and its VM did not restart it"]


def test_lost_doubled_and_orphaned_are_each_reported() -> None:
    verdict = faults.check(
        vmis={
            "a": _vmi("a", "Scheduled"),
            "b": _vmi("b", "Running", transitions=["Pending", "Running", "Running"]),
            "c": _vmi("c", "Running"),
        },
        pods=[_pod("a", "p-a"), _pod("b", "p-b"), _pod("b", "p-b2"), _pod("c", "p-c")],
        killed_vmi=None,
        killed_uid=None,
        restarted_by_vm=False,
        processes={**_running("p-a", "p-b"), "p-gone": Counter({"qemu-system-x86_64": 1})},
    )
    problems = "\n".join(verdict.problems)
    assert "a: Scheduled, not Running" in problems
    assert "b: phase transitions recorded twice: ['Running']" in problems
    assert "{'uid-b': 2}" in problems  # two active pods for one VMI
    assert "pod p-a: a QEMU process outlives its VMI" in problems
    assert "pod p-gone is gone or finished" in problems
    assert "without a QEMU process in their pod: ['p-b2', 'p-c']" in problems  # the second pod of b too


def test_program_names_python_entry_points_by_their_script() -> None:
    import os

    name = procs.program(os.getpid())
    assert name in ("pytest", "python", "__main__.py", "-m") or name.startswith(("python", "pytest"))


def test_usage_counts_restarted_processes_and_averages_launcher_pods() -> None:
    sampler = procs.Sampler()
    sampler.seen = {
        (1, 0.0): procs.Seen("virt-handler", None, 10.0, 12.0, 100 * 1024, False),
        (2, 5.0): procs.Seen("virt-handler", None, 0.0, 1.5, 80 * 1024, True),  # after a kill
        (3, 6.0): procs.Seen("qemu-system-x86_64", "pod-1", 0.0, 4.0, 200 * 1024, True),
        (4, 6.0): procs.Seen("qemu-system-x86_64", "pod-2", 0.0, 6.0, 220 * 1024, True),
        (5, 6.0): procs.Seen("virt-launcher", "pod-1", 0.0, 1.0, 60 * 1024, True),
        (6, 6.0): procs.Seen("virt-launcher-monitor", "pod-1", 0.0, 0.2, 30 * 1024, True),
        (7, 6.0): procs.Seen("virt-launcher", "pod-2", 0.0, 1.0, 60 * 1024, True),
    }
    handler = procs.component_usage(sampler)["virt-handler"]
    assert handler == {"cpu_seconds": 3.5, "peak_rss_mib": 100.0, "processes": 2}
    pods = procs.launcher_pod_usage(sampler, {"pod-1", "pod-2"})
    assert pods["qemu"] == {"cpu_seconds": 5.0, "peak_rss_mib": 210.0}
    assert pods["launcher"] == {"cpu_seconds": 1.1, "peak_rss_mib": 75.0}
    assert pods["libvirt"] == {"cpu_seconds": 0.0, "peak_rss_mib": 0.0}


def test_the_workload_has_equal_requests_and_limits_and_the_chosen_network() -> None:
    vmi = workload.vmi("vmi-000", workload.Shape(network="masquerade"), "run")
    spec = vmi["spec"]
    assert spec["domain"]["resources"]["requests"] == spec["domain"]["resources"]["limits"]
    assert spec["domain"]["devices"]["interfaces"] == [{"name": "default", "masquerade": {}}]
    assert spec["networks"] == [{"name": "default", "pod": {}}]
    bare = workload.vm("vm-000", workload.Shape(network="none", cpu_limit=False), "run")
    template = bare["spec"]["template"]["spec"]
    assert bare["spec"]["runStrategy"] == "Always"
    assert template["domain"]["devices"]["autoattachPodInterface"] is False
    assert "networks" not in template
    assert template["domain"]["resources"]["limits"] == {"memory": "128Mi"}


def test_the_report_holds_the_numbers_to_their_targets() -> None:
    lines: list[str] = []
    usage = {"cpu_seconds_to_running": 1.0, "cpu_seconds_per_vmi": 0.5, "steady_cpu_seconds": 0.1}
    result = {
        "kind": "vmi",
        "count": 2,
        "running": 2,
        "network": "none",
        "resources": {},
        "seconds_to_settle": 20.0,
        "create_to_running_seconds": {"p50": 12.0, "p95": 50.0, "max": 50.0},
        "median_object": "vmi-000",
        "median_phases_seconds": {"admission": 0.05},
        "phase_p50_seconds": {"admission": 0.04},
        "api_requests_per_object": {
            "PATCH pods": 1.0,
            "PATCH pods/status": 6.0,
            "PUT virtualmachineinstances/status": 3.0,
        },
        "vmi_versions_per_object": 6.5,
        "steady_seconds": 20.0,
        "control_plane": {"virt-handler": {**usage, "peak_rss_mib": 90.0, "processes": 1}},
        "control_plane_cpu_seconds_per_vmi": 0.5,
        "launcher_pod_average": {},
        "node_memory_mib_per_running_vmi": 300.0,
        "left_after_delete": [],
    }
    report.show(result, lines.append)
    text = "\n".join(lines)
    assert "P50  12.00 s   P95  50.00 s" in text
    assert "OVER TARGET" in text.splitlines()[4]  # P95 above 45 s
    assert "pod PATCH        1.00  (<= 1.1: ok)" in text  # pods/status, the kubelet's, apart
    assert "VMI UPDATE       3.00  (<= 2.7: OVER TARGET)" in text
    assert "after deleting the namespace: nothing left" in text


def test_changed_names_the_fields_a_write_touched() -> None:
    before = {
        "metadata": {"resourceVersion": "1", "labels": {"a": "b"}},
        "spec": {"x": 1},
        "status": {"phase": "Scheduled", "conditions": [{"type": "Ready", "status": "False"}]},
    }
    after = {
        "metadata": {"resourceVersion": "2", "labels": {"a": "b"}},
        "spec": {"x": 1},
        "status": {
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": "True"}, {"type": "LiveMigratable", "status": "True"}],
        },
    }
    assert timeline.changed(before, after) == [
        "status.conditions[LiveMigratable]",
        "status.conditions[Ready]",
        "status.phase",
    ]
    assert timeline.changed(None, after) == ["(created)"]


def test_writers_are_the_managed_fields_entries_a_write_changed() -> None:
    def version(*entries: tuple[str, str, str, str]) -> dict[str, Any]:
        fields = [
            {"manager": m, "operation": op, "time": t, **({"subresource": sub} if sub else {})}
            for m, op, sub, t in entries
        ]
        return {"metadata": {"managedFields": fields}}

    created = version(("bench-density", "Update", "", "T1"))
    by_controller = version(("bench-density", "Update", "", "T1"), ("virt-controller", "Update", "", "T2"))
    by_handler = version(
        ("bench-density", "Update", "", "T1"),
        ("virt-controller", "Update", "", "T2"),
        ("virt-handler", "Update", "", "T3"),
    )
    again = version(
        ("bench-density", "Update", "", "T1"),
        ("virt-controller", "Update", "", "T4"),
        ("virt-handler", "Update", "", "T3"),
    )
    kubelet = version(("kubelet", "Update", "status", "T5"))
    # The handler took fields over from the controller: the controller's entry changed, its time did not.
    took_over = version(
        ("bench-density", "Update", "", "T1"),
        ("virt-controller", "Update", "", "T2"),
        ("virt-handler", "Update", "", "T6"),
    )
    took_over["metadata"]["managedFields"][1]["fieldsV1"] = {"f:status": {}}
    assert timeline.writers(created, by_controller) == ["virt-controller Update"]
    assert timeline.writers(by_controller, by_handler) == ["virt-handler Update"]
    assert timeline.writers(by_handler, again) == ["virt-controller Update"]
    assert timeline.writers(created, kubelet) == ["kubelet Update/status"]
    assert timeline.writers(by_handler, took_over) == ["virt-handler Update"]
    assert timeline.writers(again, again) == ["(unattributed)"]
