"""Expectations: a key is satisfied once every expected creation and deletion was observed."""

from __future__ import annotations

from typing import Any

from kubevirt.controller import ControllerExpectations, UIDTrackingControllerExpectations


def test_unknown_keys_are_satisfied() -> None:
    assert ControllerExpectations().satisfied_expectations("ns/vm")


def test_creations_are_satisfied_once_all_are_observed() -> None:
    expectations = ControllerExpectations()
    expectations.expect_creations("ns/rs", 2)
    assert not expectations.satisfied_expectations("ns/rs")
    expectations.creation_observed("ns/rs")
    assert not expectations.satisfied_expectations("ns/rs")
    expectations.creation_observed("ns/rs")
    assert expectations.satisfied_expectations("ns/rs")


def test_deletions_and_lowering_after_failed_writes() -> None:
    expectations = ControllerExpectations()
    expectations.expect_deletions("ns/rs", 3)
    expectations.deletion_observed("ns/rs")
    assert expectations.pending("ns/rs") == (0, 2)
    expectations.lower_expectations("ns/rs", 0, 2)  # two deletes failed: they will never be observed
    assert expectations.satisfied_expectations("ns/rs")


def test_expectations_expire_after_five_minutes(clock: Any) -> None:
    expectations = ControllerExpectations(clock=clock)
    expectations.expect_creations("ns/vm", 1)
    clock.now += 299
    assert not expectations.satisfied_expectations("ns/vm")
    clock.now += 2
    assert expectations.satisfied_expectations("ns/vm")


def test_delete_expectations_forgets_the_key() -> None:
    expectations = ControllerExpectations()
    expectations.expect_creations("ns/vm", 1)
    expectations.delete_expectations("ns/vm")
    assert expectations.satisfied_expectations("ns/vm")
    expectations.creation_observed("ns/vm")  # observing an unknown key is harmless
    assert expectations.pending("ns/vm") == (0, 0)


def test_uid_tracking_counts_each_uid_once() -> None:
    expectations = UIDTrackingControllerExpectations()
    expectations.expect_deletions_by_uid("ns/rs", ["u1", "u2"])
    expectations.deletion_observed_uid("ns/rs", "u1")
    expectations.deletion_observed_uid("ns/rs", "u1")
    expectations.deletion_observed_uid("ns/rs", "other")
    assert not expectations.satisfied_expectations("ns/rs")
    assert expectations.expected_deletion_uids("ns/rs") == {"u2"}
    expectations.deletion_observed_uid("ns/rs", "u2")
    assert expectations.satisfied_expectations("ns/rs")
