"""``/migration-validate-create`` and ``/migration-validate-update``."""

from __future__ import annotations

from kubevirt.admission.migration import admit_migration_create, admit_migration_update
from kubevirt.admission.response import AdmissionResponse
from kubevirt.admission.review import AdmissionRequest
from kubevirt.virt_api.webhooks.requests import (
    KUBEVIRT_GROUP,
    Admit,
    WebhookContext,
    check_schema,
    guarded,
    new_object,
    old_object,
    require_resource,
)

RESOURCE = "virtualmachineinstancemigrations"
KIND = "VirtualMachineInstanceMigration"


def create_admitter(ctx: WebhookContext) -> Admit:
    def admit(request: AdmissionRequest) -> AdmissionResponse:
        require_resource(request, KUBEVIRT_GROUP, RESOURCE)
        migration = new_object(request)
        check_schema(ctx, KIND, migration)
        return admit_migration_create(migration, request.namespace, ctx.config, ctx.state)

    return guarded(admit)


def update_admitter(ctx: WebhookContext) -> Admit:
    def admit(request: AdmissionRequest) -> AdmissionResponse:
        require_resource(request, KUBEVIRT_GROUP, RESOURCE)
        new = new_object(request)
        check_schema(ctx, KIND, new)
        return admit_migration_update(new, old_object(request))

    return guarded(admit)
