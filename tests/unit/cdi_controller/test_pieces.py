"""The small rules: condition times, condition events, progress text, termination messages, names."""

from __future__ import annotations

from kubevirt.cdi.naming import resource_name
from kubevirt.cdi_controller import conditions, podstate, progress


def test_condition_times_follow_cdis_rules() -> None:
    stamps = iter(["t1", "t2", "t3", "t4"])
    items: list[dict[str, str]] = []
    conditions.set_condition(items, "Bound", "False", "m", "r", lambda: next(stamps))
    assert items[0] == {
        "type": "Bound",
        "status": "False",
        "message": "m",
        "reason": "r",
        "lastTransitionTime": "t1",
        "lastHeartbeatTime": "t1",
    }
    conditions.set_condition(items, "Bound", "False", "m", "r", lambda: next(stamps))
    assert items[0]["lastHeartbeatTime"] == "t1"  # nothing changed: no time moves
    conditions.set_condition(items, "Bound", "False", "m2", "r", lambda: next(stamps))
    assert (items[0]["lastTransitionTime"], items[0]["lastHeartbeatTime"]) == ("t1", "t2")
    conditions.set_condition(items, "Bound", "True", "", "Bound", lambda: next(stamps))
    assert (items[0]["lastTransitionTime"], items[0]["lastHeartbeatTime"]) == ("t3", "t3")
    assert "message" not in items[0]


def test_running_failure_event_only_for_a_new_message_of_a_bound_dv() -> None:
    status = {
        "conditions": [
            {"type": "Bound", "status": "True", "reason": "Bound", "message": "PVC dv Bound"},
            {"type": "Ready", "status": "False"},
            {"type": "Running", "status": "False", "reason": "Error", "message": "boom"},
        ]
    }
    original = [dict(c) for c in status["conditions"]]
    assert conditions.condition_events(status, original) == []
    original[2]["message"] = "older"
    assert conditions.condition_events(status, original) == [("Warning", "Error", "boom")]
    status["conditions"][2]["message"] = "scratch space required and none found"
    assert conditions.condition_events(status, original) == []


def test_progress_parsing_and_text() -> None:
    body = (
        "# HELP kubevirt_cdi_import_progress_total progress\n"
        'kubevirt_cdi_import_progress_total{ownerUID="other"} 99\n'
        'kubevirt_cdi_import_progress_total{ownerUID="abc"} 12.3456\n'
    )
    assert progress.parse_progress(body, "abc") == "12.3456"
    assert progress.parse_progress(body, "missing") is None
    assert progress.format_progress("12.3456") == "12.35%"
    assert progress.format_progress("100") == "100.00%"
    pod = {
        "spec": {"containers": [{"ports": [{"name": "metrics", "containerPort": 8443}]}]},
        "status": {"podIP": "fd00::7"},
    }
    assert progress.metrics_url(pod) == "https://[fd00::7]:8443/metrics"
    assert progress.metrics_url({"spec": pod["spec"], "status": {}}) is None


def test_termination_message_only_for_a_clean_exit() -> None:
    def pod(code: int, message: str) -> dict[str, object]:
        return {
            "status": {
                "containerStatuses": [{"state": {"terminated": {"exitCode": code, "message": message}}}]
            }
        }

    parsed = podstate.termination_message(pod(0, '{"message":"Import Complete","preallocationApplied":true}'))
    assert parsed is not None
    assert parsed.message == "Import Complete"
    assert parsed.preallocation_applied
    assert podstate.termination_message(pod(1, '{"message":"x"}')) is None
    assert podstate.termination_message(pod(0, "not json")) is None


def test_long_names_are_shortened_with_a_hash() -> None:
    assert resource_name("importer", "dv") == "importer-dv"
    long = resource_name("importer", "d" * 260)
    assert len(long) <= 253
    assert long.startswith("importer-")
