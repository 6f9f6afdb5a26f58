"""MigrationPolicy matching as KubeVirt v1.6 does it, and the configuration a matched policy hands off."""

from __future__ import annotations

from typing import Any

from kubevirt.client import VIRTUAL_MACHINE_INSTANCES
from kubevirt.client.resources import MIGRATION_POLICIES, NAMESPACES
from kubevirt.virt_controller.watch.migrationpolicy import configuration_by_policy, match_policy

from .fakes import JSON
from .test_migration_controller import NS, World


def policy(
    name: str, vmi: dict[str, str] | None = None, ns: dict[str, str] | None = None, **spec: Any
) -> JSON:
    selectors: JSON = {}
    if vmi is not None:
        selectors["virtualMachineInstanceSelector"] = vmi
    if ns is not None:
        selectors["namespaceSelector"] = ns
    return {"metadata": {"name": name}, "spec": {"selectors": selectors, **spec}}


def names(matched: Any) -> str | None:
    return None if matched is None else str(matched["metadata"]["name"])


def test_the_policy_matching_most_labels_wins_then_the_first_name() -> None:
    vmi = {"app": "db", "tier": "gold"}
    ns = {"team": "a"}
    policies = [
        policy("b-app", vmi={"app": "db"}),
        policy("a-app", vmi={"app": "db"}),
        policy("app-and-team", vmi={"app": "db"}, ns={"team": "a"}),
        policy("wrong-team", vmi={"app": "db", "tier": "gold"}, ns={"team": "b"}),
        policy("no-selectors-field", vmi=None),
    ]
    assert names(match_policy(policies, vmi, ns)) == "app-and-team"
    assert names(match_policy(policies[:2], vmi, ns)) == "a-app"
    # Same total: the one matching more VMI labels wins.
    tie = [policy("ns-heavy", vmi={"app": "db"}, ns={"team": "a"}), policy("vmi-heavy", vmi=vmi)]
    assert names(match_policy(tie, vmi, ns)) == "vmi-heavy"
    assert match_policy([policy("other", vmi={"app": "web"})], vmi, ns) is None
    assert match_policy([{"metadata": {"name": "x"}, "spec": {}}], vmi, ns) is None


def test_a_vmi_without_labels_skips_both_selectors_as_in_kubevirt() -> None:
    assert names(match_policy([policy("p", vmi={"app": "db"}, ns={"team": "a"})], None, {})) == "p"


def test_a_policy_overrides_only_what_it_sets() -> None:
    cluster = {"bandwidthPerMigration": "0Mi", "allowPostCopy": False, "allowWorkloadDisruption": False}
    assert configuration_by_policy(policy("p", vmi={}), cluster) is None
    tuned = configuration_by_policy(
        policy("p", vmi={}, allowPostCopy=True, bandwidthPerMigration="1Gi"), cluster
    )
    assert tuned == {"bandwidthPerMigration": "1Gi", "allowPostCopy": True, "allowWorkloadDisruption": True}


def test_the_hand_off_carries_the_matched_policy_and_its_configuration() -> None:
    world = World()
    world.api.put(NAMESPACES, {"metadata": {"name": NS, "labels": {"team": "a"}}})
    world.api.put(
        MIGRATION_POLICIES, policy("fast", vmi={"app": "db"}, ns={"team": "a"}, completionTimeoutPerGiB=7)
    )
    world.api.put(MIGRATION_POLICIES, policy("unrelated", vmi={"app": "web"}, allowPostCopy=True))
    world.running_vmi("vm1")
    world.api.edit(VIRTUAL_MACHINE_INSTANCES, NS, "vm1", lambda v: v["metadata"]["labels"].update(app="db"))
    world.migrate("mig1", "vm1")
    world.settle()
    world.kubelet_runs(world.target_pods("mig1")[0])
    world.settle()

    state = world.vmi("vm1")["status"]["migrationState"]
    assert state["migrationPolicyName"] == "fast"
    assert state["migrationConfiguration"]["completionTimeoutPerGiB"] == 7
    assert state["migrationConfiguration"]["allowPostCopy"] is False
    assert state["migrationConfiguration"]["bandwidthPerMigration"] == "64Mi"  # the cluster's, untouched
