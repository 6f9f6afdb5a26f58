"""virt-api's start-up: what it prepares before serving."""

from __future__ import annotations

from kubevirt.admission.schema import prepare, schema_check
from kubevirt.virt_api.app import EVERYDAY_KINDS
from kubevirt_api.openapi import crd_schema


def test_prepared_schemas_are_not_built_again_by_the_first_review() -> None:
    crd_schema.cache_clear()
    prepare(EVERYDAY_KINDS)
    built = crd_schema.cache_info().misses
    assert built == len(EVERYDAY_KINDS)
    for kind in EVERYDAY_KINDS:
        assert schema_check(kind, {"spec": {"bogus": 1}})  # still checks, with the prepared schema
    assert crd_schema.cache_info().misses == built
