"""``/migration-validate-create`` and ``/migration-validate-update``."""

from __future__ import annotations

from kubevirt.admission.migration import admit_migration_create, admit_migration_update
from kubevirt.admission.response import AdmissionResponse
from kubevirt.admission.review import AdmissionRequest
from kubevirt.virt_api.webhooks.requests import (
    KUBEVIRT_GROUP,
    Admit,
    WebhookContext,
    checked_object,
    guarded,
    old_object,
)

RESOURCE = "virtualmachineinstancemigrations"
KIND = "VirtualMachineInstanceMigration"


def create_admitter(ctx: WebhookContext) -> Admit:
    def admit(request: AdmissionRequest) -> AdmissionResponse:
        migration = checked_object(ctx, request, KUBEVIRT_GROUP, RESOURCE, KIND)
        return admit_migration_create(migration, request.namespace, ctx.config, ctx.state)

    return guarded(admit)


def update_admitter(ctx: WebhookContext) -> Admit:
    def admit(request: AdmissionRequest) -> AdmissionResponse:
        new = checked_object(ctx, request, KUBEVIRT_GROUP, RESOURCE, KIND)
        return admit_migration_update(new, old_object(request))

    return guarded(admit)
