"""The user-facing ClusterRoles KubeVirt installs: ``kubevirt.io:admin|edit|view`` aggregate into
Kubernetes' own admin/edit/view roles, ``kubevirt.io:migrate`` stands alone, and ``kubevirt.io:default``
lets every authenticated user discover the subresource API (KubeVirt's ``rbac/cluster.go``)."""

from __future__ import annotations

from kubevirt.virt_operator.resource.rbac import RBAC_API_VERSION, Rule, metadata, rules
from kubevirt_api.view import JSON

SUBRESOURCES = "subresources.kubevirt.io"
DEFAULT_ROLE = "kubevirt.io:default"
_WRITE = ("get", "delete", "create", "update", "patch", "list", "watch")
_ADMIN = (*_WRITE, "deletecollection")
_READ = ("get", "list", "watch")
_INSTANCETYPES = (
    "virtualmachineinstancetypes",
    "virtualmachineclusterinstancetypes",
    "virtualmachinepreferences",
    "virtualmachineclusterpreferences",
)
_VMI_READS = (
    "virtualmachineinstances/console",
    "virtualmachineinstances/vnc",
    "virtualmachineinstances/vnc/screenshot",
    "virtualmachineinstances/portforward",
    "virtualmachineinstances/guestosinfo",
    "virtualmachineinstances/filesystemlist",
    "virtualmachineinstances/userlist",
    "virtualmachineinstances/sev/fetchcertchain",
    "virtualmachineinstances/sev/querylaunchmeasurement",
    "virtualmachineinstances/usbredir",
    "virtualmachines/objectgraph",
    "virtualmachineinstances/objectgraph",
)
_VMI_ACTIONS = (
    "virtualmachineinstances/pause",
    "virtualmachineinstances/unpause",
    "virtualmachineinstances/addvolume",
    "virtualmachineinstances/removevolume",
    "virtualmachineinstances/freeze",
    "virtualmachineinstances/unfreeze",
    "virtualmachineinstances/softreboot",
    "virtualmachineinstances/reset",
    "virtualmachineinstances/sev/setupsession",
    "virtualmachineinstances/sev/injectlaunchsecret",
)
_VM_ACTIONS = (
    "virtualmachines/start",
    "virtualmachines/stop",
    "virtualmachines/restart",
    "virtualmachines/addvolume",
    "virtualmachines/removevolume",
    "virtualmachines/memorydump",
)
_WORKLOADS = (
    "virtualmachines",
    "virtualmachineinstances",
    "virtualmachineinstancepresets",
    "virtualmachineinstancereplicasets",
)


def _user_rules(verbs: tuple[str, ...]) -> tuple[Rule, ...]:
    """What admin (``verbs`` with deletecollection) and edit (without) share."""
    return (
        ((SUBRESOURCES,), _VMI_READS, ("get",)),
        ((SUBRESOURCES,), _VMI_ACTIONS, ("update",)),
        ((SUBRESOURCES,), ("virtualmachines/expand-spec", "virtualmachines/portforward"), ("get",)),
        ((SUBRESOURCES,), _VM_ACTIONS, ("update",)),
        ((SUBRESOURCES,), ("expand-vm-spec",), ("update",)),
        (("kubevirt.io",), _WORKLOADS, verbs),
        (("kubevirt.io",), ("virtualmachineinstancemigrations",), _READ),
        (
            ("snapshot.kubevirt.io",),
            ("virtualmachinesnapshots", "virtualmachinesnapshotcontents", "virtualmachinerestores"),
            verbs,
        ),
        (("export.kubevirt.io",), ("virtualmachineexports",), verbs),
        (("clone.kubevirt.io",), ("virtualmachineclones",), verbs),
        (("instancetype.kubevirt.io",), _INSTANCETYPES, verbs),
        (("pool.kubevirt.io",), ("virtualmachinepools",), verbs),
    )


_MIGRATION_POLICIES: Rule = (("migrations.kubevirt.io",), ("migrationpolicies",), _READ)
_KUBEVIRTS: Rule = (("kubevirt.io",), ("kubevirts",), ("get", "list"))

ADMIN_RULES: tuple[Rule, ...] = (*_user_rules(_ADMIN), _MIGRATION_POLICIES)
EDIT_RULES: tuple[Rule, ...] = (*_user_rules(_WRITE), _KUBEVIRTS, _MIGRATION_POLICIES)
VIEW_RULES: tuple[Rule, ...] = (
    _KUBEVIRTS,
    (
        (SUBRESOURCES,),
        (
            "virtualmachines/expand-spec",
            "virtualmachineinstances/guestosinfo",
            "virtualmachineinstances/filesystemlist",
            "virtualmachineinstances/userlist",
            "virtualmachineinstances/sev/fetchcertchain",
            "virtualmachineinstances/sev/querylaunchmeasurement",
            "virtualmachines/objectgraph",
            "virtualmachineinstances/objectgraph",
        ),
        ("get",),
    ),
    ((SUBRESOURCES,), ("expand-vm-spec",), ("update",)),
    (("kubevirt.io",), (*_WORKLOADS, "virtualmachineinstancemigrations"), _READ),
    (
        ("snapshot.kubevirt.io",),
        ("virtualmachinesnapshots", "virtualmachinesnapshotcontents", "virtualmachinerestores"),
        _READ,
    ),
    (("export.kubevirt.io",), ("virtualmachineexports",), _READ),
    (("clone.kubevirt.io",), ("virtualmachineclones",), _READ),
    (("instancetype.kubevirt.io",), _INSTANCETYPES, _READ),
    (("pool.kubevirt.io",), ("virtualmachinepools",), _READ),
    _MIGRATION_POLICIES,
)
MIGRATE_RULES: tuple[Rule, ...] = (
    ((SUBRESOURCES,), ("virtualmachines/migrate",), ("update",)),
    (("kubevirt.io",), ("virtualmachineinstancemigrations",), _ADMIN),
)
DEFAULT_RULES: tuple[Rule, ...] = (
    (("kubevirt.io",), ("kubevirts",), ("get", "list")),
    ((SUBRESOURCES,), ("version", "guestfs"), ("get", "list")),
)
INSTANCETYPE_VIEW_RULES: tuple[Rule, ...] = (
    (
        ("instancetype.kubevirt.io",),
        ("virtualmachineclusterinstancetypes", "virtualmachineclusterpreferences"),
        _READ,
    ),
)
_AUTOUPDATE = {"rbac.authorization.kubernetes.io/autoupdate": "true"}


def _cluster_role(name: str, table: tuple[Rule, ...], aggregate_to: str | None = None) -> JSON:
    meta = metadata(name)
    if aggregate_to is not None:
        meta["labels"][f"rbac.authorization.k8s.io/aggregate-to-{aggregate_to}"] = "true"
    return {"apiVersion": RBAC_API_VERSION, "kind": "ClusterRole", "metadata": meta, "rules": rules(table)}


def _bound_to_all(role: str) -> JSON:
    meta = metadata(role)
    meta["annotations"] = dict(_AUTOUPDATE)
    return {
        "apiVersion": RBAC_API_VERSION,
        "kind": "ClusterRoleBinding",
        "metadata": meta,
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": [
            {"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": "system:authenticated"}
        ],
    }


def cluster_roles() -> list[JSON]:
    default = _cluster_role(DEFAULT_ROLE, DEFAULT_RULES)
    default["metadata"]["annotations"] = dict(_AUTOUPDATE)
    instancetype_view = "instancetype.kubevirt.io:view"
    return [
        default,
        _bound_to_all(DEFAULT_ROLE),
        _cluster_role("kubevirt.io:admin", ADMIN_RULES, "admin"),
        _cluster_role("kubevirt.io:edit", EDIT_RULES, "edit"),
        _cluster_role("kubevirt.io:view", VIEW_RULES, "view"),
        _cluster_role("kubevirt.io:migrate", MIGRATE_RULES),
        _cluster_role(instancetype_view, INSTANCETYPE_VIEW_RULES),
        _bound_to_all(instancetype_view),
    ]
