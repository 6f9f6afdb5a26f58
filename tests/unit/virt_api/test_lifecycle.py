"""start, stop, restart and migrate: KubeVirt's rules, messages and the one write each makes."""

from __future__ import annotations

from typing import Any

import pytest

from kubevirt.client import (
    PODS,
    VIRTUAL_MACHINE_INSTANCE_MIGRATIONS,
    VIRTUAL_MACHINE_INSTANCES,
    VIRTUAL_MACHINES,
    ApiError,
    InvalidError,
)
from kubevirt.virt_api.rest.bodies import Options
from kubevirt.virt_api.rest.lifecycle import VMLifecycle
from kubevirt.virt_api.rest.status import StatusError
from kubevirt_testing.fake_kube_api import FakeKubeApi

NS = "ns"


def vm_object(name: str = "vm", *, status: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    obj: dict[str, Any] = {"metadata": {"name": name, "namespace": NS}, "spec": {"template": {}, **spec}}
    if status is not None:
        obj["status"] = status
    return obj


def vmi_object(name: str = "vm", phase: str = "Running", **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": NS}, "spec": spec, "status": {"phase": phase}}


@pytest.fixture
def api() -> FakeKubeApi:
    return FakeKubeApi()


def lifecycle(api: FakeKubeApi) -> VMLifecycle:
    return VMLifecycle(api)


def refusal(call: Any, *args: Any) -> StatusError:
    with pytest.raises(StatusError) as caught:
        call(*args)
    return caught.value


def conflict_message(why: str, name: str = "vm") -> str:
    return f'Operation cannot be fulfilled on virtualmachine.kubevirt.io "{name}": {why}'


def status_of(api: FakeKubeApi, name: str = "vm") -> dict[str, Any]:
    return dict(api.get(VIRTUAL_MACHINES, NS, name).get("status") or {})


# start


def test_start_of_a_missing_vm_is_404(api: FakeKubeApi) -> None:
    err = refusal(lifecycle(api).start, NS, "absent", Options())
    assert (err.code, err.reason, err.message) == (
        404,
        "NotFound",
        'virtualmachine.kubevirt.io "absent" not found',
    )
    assert err.body()["details"] == {"name": "absent", "group": "kubevirt.io", "kind": "virtualmachine"}


@pytest.mark.parametrize("phase", ["Pending", "Scheduling", "Scheduled", "Running"])
def test_start_with_a_live_vmi_is_already_running(api: FakeKubeApi, phase: str) -> None:
    api.add(VIRTUAL_MACHINES, vm_object(runStrategy="Manual"))
    api.add(VIRTUAL_MACHINE_INSTANCES, vmi_object(phase=phase))
    err = refusal(lifecycle(api).start, NS, "vm", Options())
    assert (err.code, err.message) == (409, conflict_message("VM is already running"))
    assert api.writes == []


def test_start_of_halted_flips_run_strategy_to_always(api: FakeKubeApi) -> None:
    api.add(VIRTUAL_MACHINES, vm_object(runStrategy="Halted"))
    assert lifecycle(api).start(NS, "vm", Options()) == 202
    assert api.get(VIRTUAL_MACHINES, NS, "vm")["spec"]["runStrategy"] == "Always"
    assert api.writes == [("patch", "virtualmachines", NS, "vm")]


def test_start_of_deprecated_running_false_sets_running_true(api: FakeKubeApi) -> None:
    api.add(VIRTUAL_MACHINES, vm_object(running=False))
    lifecycle(api).start(NS, "vm", Options())
    assert api.get(VIRTUAL_MACHINES, NS, "vm")["spec"]["running"] is True


def test_paused_start_of_halted_is_a_start_request_with_paused_data(api: FakeKubeApi) -> None:
    api.add(VIRTUAL_MACHINES, vm_object(runStrategy="Halted"))
    lifecycle(api).start(NS, "vm", Options(paused=True))
    assert status_of(api) == {"stateChangeRequests": [{"action": "Start", "data": {"paused": "true"}}]}
    assert api.writes == [("patch_status", "virtualmachines", NS, "vm")]


def test_start_of_manual_appends_a_start_request_and_clears_start_failure(api: FakeKubeApi) -> None:
    api.add(
        VIRTUAL_MACHINES,
        vm_object(
            runStrategy="Manual", status={"printableStatus": "Stopped", "startFailure": {"retries": 2}}
        ),
    )
    lifecycle(api).start(NS, "vm", Options())
    assert status_of(api) == {"printableStatus": "Stopped", "stateChangeRequests": [{"action": "Start"}]}


def test_start_of_manual_with_a_finished_vmi_stops_it_first(api: FakeKubeApi) -> None:
    api.add(VIRTUAL_MACHINES, vm_object(runStrategy="Manual"))
    vmi = api.add(VIRTUAL_MACHINE_INSTANCES, vmi_object(phase="Failed"))
    lifecycle(api).start(NS, "vm", Options())
    uid = vmi["metadata"]["uid"]
    assert status_of(api)["stateChangeRequests"] == [{"action": "Stop", "uid": uid}, {"action": "Start"}]


def test_start_of_rerun_on_failure(api: FakeKubeApi) -> None:
    api.add(VIRTUAL_MACHINES, vm_object(runStrategy="RerunOnFailure"))
    api.add(VIRTUAL_MACHINE_INSTANCES, vmi_object(phase="Failed"))
    err = refusal(lifecycle(api).start, NS, "vm", Options())
    assert (err.code, err.message) == (
        409,
        conflict_message("RerunOnFailure does not support starting VM from failed state"),
    )
    api.delete(VIRTUAL_MACHINE_INSTANCES, NS, "vm")
    vmi = api.add(VIRTUAL_MACHINE_INSTANCES, vmi_object(phase="Succeeded"))
    lifecycle(api).start(NS, "vm", Options())
    assert status_of(api)["stateChangeRequests"][0] == {"action": "Stop", "uid": vmi["metadata"]["uid"]}


@pytest.mark.parametrize("strategy", ["Always", "Once"])
def test_start_is_refused_for_always_and_once(api: FakeKubeApi, strategy: str) -> None:
    api.add(VIRTUAL_MACHINES, vm_object(runStrategy=strategy))
    err = refusal(lifecycle(api).start, NS, "vm", Options())
    assert (err.code, err.message) == (
        409,
        conflict_message(f"{strategy} does not support manual start requests"),
    )


def test_start_is_refused_while_manual_recovery_is_required(api: FakeKubeApi) -> None:
    conditions = [{"type": "ManualRecoveryRequired", "status": "True"}]
    api.add(VIRTUAL_MACHINES, vm_object(runStrategy="Halted", status={"conditions": conditions}))
    err = refusal(lifecycle(api).start, NS, "vm", Options())
    assert err.code == 409
    assert "VM recovery required: Volume migration failed" in err.message


def test_pending_requests_make_a_second_start_an_internal_error(api: FakeKubeApi) -> None:
    api.add(
        VIRTUAL_MACHINES,
        vm_object(runStrategy="Manual", status={"stateChangeRequests": [{"action": "Stop"}]}),
    )
    err = refusal(lifecycle(api).start, NS, "vm", Options())
    assert (err.code, err.reason) == (500, "InternalError")
    assert err.message == "Internal error occurred: unable to complete request: stop/start already underway"


class FailingPatches(FakeKubeApi):
    """Every patch fails with the given error, as a real server's answer to a lost race."""

    def __init__(self, error: ApiError) -> None:
        super().__init__()
        self.error = error

    def patch(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        raise self.error


def test_a_failed_test_operation_is_a_conflict() -> None:
    api = FailingPatches(
        InvalidError(422, "Invalid", "jsonpatch test operation does not apply: doc is missing path")
    )
    api.add(VIRTUAL_MACHINES, vm_object(runStrategy="Manual", status={"printableStatus": "Stopped"}))
    err = refusal(lifecycle(api).start, NS, "vm", Options())
    assert (err.code, err.reason) == (409, "Conflict")
    assert err.message == conflict_message("jsonpatch test operation does not apply: doc is missing path")


def test_the_servers_generic_patch_refusal_is_an_internal_error() -> None:
    generic = "the server rejected our request due to an error in our request"
    api = FailingPatches(InvalidError(422, "Invalid", generic))
    api.add(VIRTUAL_MACHINES, vm_object(runStrategy="Halted"))
    err = refusal(lifecycle(api).start, NS, "vm", Options())
    assert (err.code, err.message) == (500, f"Internal error occurred: {generic}")


def test_both_running_and_run_strategy_is_an_internal_error(api: FakeKubeApi) -> None:
    api.add(VIRTUAL_MACHINES, vm_object(runStrategy="Halted", running=True))
    err = refusal(lifecycle(api).start, NS, "vm", Options())
    assert (err.code, err.message) == (
        500,
        "Internal error occurred: running and runstrategy are mutually exclusive",
    )


def test_dry_run_start_writes_nothing(api: FakeKubeApi) -> None:
    api.add(VIRTUAL_MACHINES, vm_object(runStrategy="Halted"))
    assert lifecycle(api).start(NS, "vm", Options(dry_run=["All"])) == 202
    assert api.writes == []
    assert api.get(VIRTUAL_MACHINES, NS, "vm")["spec"]["runStrategy"] == "Halted"


# stop


@pytest.mark.parametrize("strategy", ["Always", "Once"])
def test_stop_of_always_and_once_halts_even_without_a_vmi(api: FakeKubeApi, strategy: str) -> None:
    api.add(VIRTUAL_MACHINES, vm_object(runStrategy=strategy))
    assert lifecycle(api).stop(NS, "vm", Options()) == 202
    assert api.get(VIRTUAL_MACHINES, NS, "vm")["spec"]["runStrategy"] == "Halted"


@pytest.mark.parametrize("strategy", ["Manual", "RerunOnFailure", "Halted"])
def test_stop_without_a_live_vmi_is_not_running(api: FakeKubeApi, strategy: str) -> None:
    api.add(VIRTUAL_MACHINES, vm_object(runStrategy=strategy))
    api.add(VIRTUAL_MACHINE_INSTANCES, vmi_object(phase="Succeeded"))
    err = refusal(lifecycle(api).stop, NS, "vm", Options())
    assert (err.code, err.message) == (409, conflict_message("VM is not running"))


def test_stop_of_manual_is_a_stop_request_for_the_vmi(api: FakeKubeApi) -> None:
    api.add(
        VIRTUAL_MACHINES,
        vm_object(runStrategy="Manual", status={"stateChangeRequests": [{"action": "Start"}]}),
    )
    vmi = api.add(VIRTUAL_MACHINE_INSTANCES, vmi_object())
    lifecycle(api).stop(NS, "vm", Options())
    assert status_of(api)["stateChangeRequests"] == [{"action": "Stop", "uid": vmi["metadata"]["uid"]}]
    assert api.get(VIRTUAL_MACHINES, NS, "vm")["spec"]["runStrategy"] == "Manual"


def test_stop_with_a_grace_period_patches_the_vmi_first(api: FakeKubeApi) -> None:
    api.add(VIRTUAL_MACHINES, vm_object(runStrategy="Always"))
    api.add(VIRTUAL_MACHINE_INSTANCES, vmi_object(terminationGracePeriodSeconds=180))
    lifecycle(api).stop(NS, "vm", Options(grace_period=0))
    assert api.get(VIRTUAL_MACHINE_INSTANCES, NS, "vm")["spec"]["terminationGracePeriodSeconds"] == 0
    assert [verb for verb, plural, *_ in api.writes] == ["patch", "patch"]


def test_halted_only_takes_a_shorter_grace_period(api: FakeKubeApi) -> None:
    api.add(VIRTUAL_MACHINES, vm_object(runStrategy="Halted"))
    api.add(VIRTUAL_MACHINE_INSTANCES, vmi_object(terminationGracePeriodSeconds=30))
    message = conflict_message("Halted only supports manual stop requests with a shorter graceperiod")
    assert refusal(lifecycle(api).stop, NS, "vm", Options()).message == message
    assert refusal(lifecycle(api).stop, NS, "vm", Options(grace_period=30)).message == message
    lifecycle(api).stop(NS, "vm", Options(grace_period=5))
    assert status_of(api)["stateChangeRequests"][0]["action"] == "Stop"


def test_halted_with_no_grace_period_set_takes_any(api: FakeKubeApi) -> None:
    api.add(VIRTUAL_MACHINES, vm_object(runStrategy="Halted"))
    api.add(VIRTUAL_MACHINE_INSTANCES, vmi_object())
    assert lifecycle(api).stop(NS, "vm", Options(grace_period=100)) == 202


def test_stop_supersedes_pending_requests(api: FakeKubeApi) -> None:
    pending = [{"action": "Stop", "uid": "old"}, {"action": "Start"}]
    api.add(VIRTUAL_MACHINES, vm_object(runStrategy="Manual", status={"stateChangeRequests": pending}))
    vmi = api.add(VIRTUAL_MACHINE_INSTANCES, vmi_object())
    lifecycle(api).stop(NS, "vm", Options())
    assert status_of(api)["stateChangeRequests"] == [{"action": "Stop", "uid": vmi["metadata"]["uid"]}]


# restart


@pytest.mark.parametrize(
    ("grace", "message"),
    [
        (5, "For force restart, only gracePeriod=0 is supported for now"),
        (-1, "gracePeriod has to be greater or equal to 0"),
    ],
)
def test_restart_grace_period_rules(api: FakeKubeApi, grace: int, message: str) -> None:
    err = refusal(lifecycle(api).restart, NS, "vm", Options(grace_period=grace))
    assert (err.code, err.reason, err.message) == (400, "BadRequest", message)


@pytest.mark.parametrize("strategy", ["Halted", "Once"])
def test_restart_is_refused_for_halted_and_once(api: FakeKubeApi, strategy: str) -> None:
    api.add(VIRTUAL_MACHINES, vm_object(runStrategy=strategy))
    err = refusal(lifecycle(api).restart, NS, "vm", Options())
    assert err.message == conflict_message(f"RunStategy {strategy} does not support manual restart requests")


def test_restart_without_a_vmi_is_not_running_halted(api: FakeKubeApi) -> None:
    api.add(VIRTUAL_MACHINES, vm_object(runStrategy="Always"))
    assert refusal(lifecycle(api).restart, NS, "vm", Options()).message == conflict_message(
        "VM is not running: Halted"
    )


def test_restart_is_stop_then_start(api: FakeKubeApi) -> None:
    api.add(VIRTUAL_MACHINES, vm_object(runStrategy="Always"))
    vmi = api.add(VIRTUAL_MACHINE_INSTANCES, vmi_object())
    assert lifecycle(api).restart(NS, "vm", Options()) == 202
    uid = vmi["metadata"]["uid"]
    assert status_of(api) == {"stateChangeRequests": [{"action": "Stop", "uid": uid}, {"action": "Start"}]}
    assert api.writes == [("patch_status", "virtualmachines", NS, "vm")]


def test_forced_restart_deletes_the_running_launcher_pod(api: FakeKubeApi) -> None:
    api.add(VIRTUAL_MACHINES, vm_object(runStrategy="Always"))
    vmi = api.add(VIRTUAL_MACHINE_INSTANCES, vmi_object())
    labels = {"kubevirt.io": "virt-launcher", "kubevirt.io/created-by": vmi["metadata"]["uid"]}
    for name, phase in (("old", "Succeeded"), ("launcher", "Running")):
        api.add(
            PODS, {"metadata": {"name": name, "namespace": NS, "labels": labels}, "status": {"phase": phase}}
        )
    lifecycle(api).restart(NS, "vm", Options(grace_period=0))
    assert [pod["metadata"]["name"] for pod in api.objects_of(PODS)] == ["old"]


# migrate


def test_migrate_needs_a_running_vmi(api: FakeKubeApi) -> None:
    assert refusal(lifecycle(api).migrate, NS, "vm", Options()).code == 404
    api.add(VIRTUAL_MACHINES, vm_object(runStrategy="Always"))
    err = refusal(lifecycle(api).migrate, NS, "vm", Options())
    assert err.message == 'virtualmachineinstance.kubevirt.io "vm" not found'
    api.add(VIRTUAL_MACHINE_INSTANCES, vmi_object(phase="Scheduled"))
    assert refusal(lifecycle(api).migrate, NS, "vm", Options()).message == conflict_message(
        "VM is not running"
    )


def test_migrate_creates_a_migration(api: FakeKubeApi) -> None:
    api.add(VIRTUAL_MACHINES, vm_object(runStrategy="Always"))
    api.add(VIRTUAL_MACHINE_INSTANCES, vmi_object())
    assert lifecycle(api).migrate(NS, "vm", Options(added_node_selector={"zone": "b"})) == 202
    [migration] = api.objects_of(VIRTUAL_MACHINE_INSTANCE_MIGRATIONS)
    assert migration["metadata"]["name"].startswith("kubevirt-migrate-vm-")
    assert migration["spec"] == {"vmiName": "vm", "addedNodeSelector": {"zone": "b"}}
    lifecycle(api).migrate(NS, "vm", Options(dry_run=["All"]))
    assert len(api.objects_of(VIRTUAL_MACHINE_INSTANCE_MIGRATIONS)) == 1


def test_a_failed_migration_create_is_an_internal_error() -> None:
    class Refusing(FakeKubeApi):
        def create(
            self, resource: Any, namespace: Any, body: Any, *, dry_run: bool = False
        ) -> dict[str, Any]:
            if resource == VIRTUAL_MACHINE_INSTANCE_MIGRATIONS:
                raise ApiError(400, "BadRequest", "admission webhook denied the request")
            return super().create(resource, namespace, body, dry_run=dry_run)

    api = Refusing()
    api.add(VIRTUAL_MACHINES, vm_object(runStrategy="Always"))
    api.add(VIRTUAL_MACHINE_INSTANCES, vmi_object())
    err = refusal(lifecycle(api).migrate, NS, "vm", Options())
    assert (err.code, err.message) == (500, "Internal error occurred: admission webhook denied the request")
