"""``/migration-mutate-create``: the ``kubevirt.io/vmi-name`` label and the migration finalizer."""

from __future__ import annotations

from kubevirt.admission import jsonpatch, response
from kubevirt.admission.migration import mutate_migration
from kubevirt.admission.response import AdmissionResponse
from kubevirt.admission.review import AdmissionRequest
from kubevirt.virt_api.webhooks.requests import (
    KUBEVIRT_GROUP,
    Admit,
    WebhookContext,
    guarded,
    new_object,
    require_resource,
)


def mutator(_ctx: WebhookContext) -> Admit:
    def mutate(request: AdmissionRequest) -> AdmissionResponse:
        require_resource(request, KUBEVIRT_GROUP, "virtualmachineinstancemigrations")
        migration = new_object(request)
        return response.patched(jsonpatch.top_level(migration, mutate_migration(migration), ("metadata",)))

    return guarded(mutate)
