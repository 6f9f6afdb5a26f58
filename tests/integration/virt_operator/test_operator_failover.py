"""virt-operator replicas: one leads, and when it dies mid-way a successor takes the Lease over and
converges the install, repairing what changed while nobody watched."""

from __future__ import annotations

import time

import pytest

from kubevirt.client import KubeClient
from kubevirt.client.resources import DEPLOYMENTS, SECRETS
from kubevirt_testing.operator import (
    NS,
    condition,
    create_kubevirt,
    deployed,
    eventually,
    find,
    kubevirt,
    running_operator,
)

pytestmark = pytest.mark.integration


def test_a_successor_converges_after_the_leader_dies(kube: KubeClient, operator_kube: KubeClient) -> None:
    with running_operator(operator_kube):
        create_kubevirt(kube)
        eventually(
            "the first operator installs",
            lambda: condition(kubevirt(kube), "Created").get("status") == "True",
        )
    # The first operator is gone without releasing its Lease, as after a kill -9. Meanwhile:
    kube.delete(DEPLOYMENTS, NS, "virt-api")
    kube.delete(SECRETS, NS, "kubevirt-ca")

    with (
        running_operator(operator_kube, wait_for_lead=False) as second,
        running_operator(operator_kube, wait_for_lead=False) as third,
    ):
        eventually(
            "one successor leads", lambda: second.leading.is_set() or third.leading.is_set(), timeout=30
        )
        time.sleep(1.0)
        assert second.leading.is_set() != third.leading.is_set(), "exactly one replica leads"
        eventually(
            "virt-api's Deployment is back", lambda: find(kube, DEPLOYMENTS, NS, "virt-api") is not None
        )
        eventually("the CA is back", lambda: find(kube, SECRETS, NS, "kubevirt-ca") is not None)
        deployed(kube)
