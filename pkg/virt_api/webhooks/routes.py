"""KubeVirt's webhook paths (``components/webhooks.go``) and what serves each."""

from __future__ import annotations

from kubevirt.virt_api.webhooks.mutating_webhook.mutators import migration as migration_mutator
from kubevirt.virt_api.webhooks.mutating_webhook.mutators import vm as vm_mutator
from kubevirt.virt_api.webhooks.mutating_webhook.mutators import vmi as vmi_mutator
from kubevirt.virt_api.webhooks.requests import Admit, VMIPatcher, WebhookContext
from kubevirt.virt_api.webhooks.validating_webhook.admitters import (
    clones,
    exports,
    migrations,
    pod_eviction,
    presets,
    replicasets,
    snapshots,
    status,
    vmi,
    vms,
)

VMI_MUTATE = "/virtualmachineinstances-mutate"
VMI_VALIDATE_CREATE = "/virtualmachineinstances-validate-create"
VMI_VALIDATE_UPDATE = "/virtualmachineinstances-validate-update"
VM_MUTATE = "/virtualmachines-mutate"
VM_VALIDATE = "/virtualmachines-validate"
MIGRATION_MUTATE_CREATE = "/migration-mutate-create"
MIGRATION_VALIDATE_CREATE = "/migration-validate-create"
MIGRATION_VALIDATE_UPDATE = "/migration-validate-update"
VMIRS_VALIDATE = "/virtualmachinereplicaset-validate"
VMPOOL_VALIDATE = "/virtualmachinepool-validate"
VMIPRESET_VALIDATE = "/vmipreset-validate"
STATUS_VALIDATE = "/status-validate"
VMSNAPSHOT_VALIDATE = "/virtualmachinesnapshots-validate"
VMRESTORE_VALIDATE = "/virtualmachinerestores-validate"
VMEXPORT_VALIDATE = "/virtualmachineexports-validate"
POD_EVICTION_VALIDATE = "/pod-eviction-validate"
VM_CLONE_VALIDATE = "/vm-clone-validate-create"
VM_CLONE_MUTATE = "/vm-clone-mutate-create"


def webhook_handlers(ctx: WebhookContext, *, patch_vmi: VMIPatcher | None = None) -> dict[str, Admit]:
    return {
        VMI_MUTATE: vmi_mutator.mutator(ctx),
        VMI_VALIDATE_CREATE: vmi.create_admitter(ctx),
        VMI_VALIDATE_UPDATE: vmi.update_admitter(ctx),
        VM_MUTATE: vm_mutator.mutator(ctx),
        VM_VALIDATE: vms.admitter(ctx),
        MIGRATION_MUTATE_CREATE: migration_mutator.mutator(ctx),
        MIGRATION_VALIDATE_CREATE: migrations.create_admitter(ctx),
        MIGRATION_VALIDATE_UPDATE: migrations.update_admitter(ctx),
        VMIRS_VALIDATE: replicasets.replicaset_admitter(ctx),
        VMPOOL_VALIDATE: replicasets.pool_admitter(ctx),
        VMIPRESET_VALIDATE: presets.admitter(ctx),
        STATUS_VALIDATE: status.admitter(ctx),
        VMSNAPSHOT_VALIDATE: snapshots.snapshot_admitter(ctx),
        VMRESTORE_VALIDATE: snapshots.restore_admitter(ctx),
        VMEXPORT_VALIDATE: exports.admitter(ctx),
        POD_EVICTION_VALIDATE: pod_eviction.admitter(ctx, patch_vmi),
        VM_CLONE_VALIDATE: clones.admitter(ctx),
        VM_CLONE_MUTATE: clones.mutator(ctx),
    }
