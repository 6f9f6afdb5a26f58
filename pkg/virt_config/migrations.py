"""The cluster's live-migration settings (``spec.configuration.migrations``) with KubeVirt's defaults.

The same values travel to the source virt-launcher as the ``options`` JSON of a MigrationRequest, under
Go's field names, and are copied into ``status.migrationState.migrationConfiguration`` at hand-off.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kubevirt_api.view import View

# KubeVirt's defaults (pkg/virt-config): five migrations in the cluster, two leaving any one node.
PARALLEL_MIGRATIONS_PER_CLUSTER = 5
PARALLEL_OUTBOUND_MIGRATIONS_PER_NODE = 2
BANDWIDTH_PER_MIGRATION = "0Mi"
PROGRESS_TIMEOUT = 150
COMPLETION_TIMEOUT_PER_GIB = 150
# Nodes tainted with this key (NoSchedule) are evacuated (KubeVirt's deprecated way of draining).
NODE_DRAIN_TAINT_KEY = "kubevirt.io/drain"


class InvalidMigrationConfigurationError(ValueError):
    """A ``migrations`` field of the wrong type; the message names the field."""


@dataclass(frozen=True)
class MigrationConfig:
    parallel_migrations_per_cluster: int = PARALLEL_MIGRATIONS_PER_CLUSTER
    parallel_outbound_migrations_per_node: int = PARALLEL_OUTBOUND_MIGRATIONS_PER_NODE
    bandwidth_per_migration: str = BANDWIDTH_PER_MIGRATION
    progress_timeout: int = PROGRESS_TIMEOUT
    completion_timeout_per_gib: int = COMPLETION_TIMEOUT_PER_GIB
    unsafe_migration_override: bool = False
    allow_auto_converge: bool = False
    allow_post_copy: bool = False
    allow_workload_disruption: bool = False
    # Plain TCP between the nodes' migration proxies instead of mutual TLS.
    disable_tls: bool = False
    node_drain_taint_key: str = NODE_DRAIN_TAINT_KEY

    @classmethod
    def from_configuration(cls, migrations: View) -> MigrationConfig:
        """Reads ``migrations`` (absent and null keys keep the defaults); raises
        :class:`InvalidMigrationConfigurationError` naming the field for a value of the wrong type."""
        migrations = migrations.reporting(InvalidMigrationConfigurationError)
        # A quantity, as written: its string form or an integer (the CRD's int-or-string). Whether it
        # parses is the launcher's to say, as it was when it first got it.
        bandwidth = migrations.get("bandwidthPerMigration")
        if bandwidth is None:
            bandwidth = BANDWIDTH_PER_MIGRATION
        elif not isinstance(bandwidth, (str, int)) or isinstance(bandwidth, bool):
            raise migrations.fail("bandwidthPerMigration", "must be a quantity (a string or an integer)")
        return cls(
            parallel_migrations_per_cluster=migrations.integer(
                "parallelMigrationsPerCluster", default=PARALLEL_MIGRATIONS_PER_CLUSTER, minimum=0
            ),
            parallel_outbound_migrations_per_node=migrations.integer(
                "parallelOutboundMigrationsPerNode", default=PARALLEL_OUTBOUND_MIGRATIONS_PER_NODE, minimum=0
            ),
            bandwidth_per_migration=str(bandwidth),
            progress_timeout=migrations.integer("progressTimeout", default=PROGRESS_TIMEOUT, minimum=0),
            completion_timeout_per_gib=migrations.integer(
                "completionTimeoutPerGiB", default=COMPLETION_TIMEOUT_PER_GIB, minimum=0
            ),
            unsafe_migration_override=migrations.boolean("unsafeMigrationOverride"),
            allow_auto_converge=migrations.boolean("allowAutoConverge"),
            allow_post_copy=migrations.boolean("allowPostCopy"),
            allow_workload_disruption=migrations.boolean("allowWorkloadDisruption"),
            disable_tls=migrations.boolean("disableTLS"),
            # "" keeps the default key.
            node_drain_taint_key=migrations.string("nodeDrainTaintKey", default=NODE_DRAIN_TAINT_KEY),
        )

    def to_status(self) -> dict[str, Any]:
        """``migrationState.migrationConfiguration`` as KubeVirt writes it (the API's camelCase)."""
        return {
            "parallelMigrationsPerCluster": self.parallel_migrations_per_cluster,
            "parallelOutboundMigrationsPerNode": self.parallel_outbound_migrations_per_node,
            "bandwidthPerMigration": self.bandwidth_per_migration,
            "progressTimeout": self.progress_timeout,
            "completionTimeoutPerGiB": self.completion_timeout_per_gib,
            "unsafeMigrationOverride": self.unsafe_migration_override,
            "allowAutoConverge": self.allow_auto_converge,
            "allowPostCopy": self.allow_post_copy,
            "allowWorkloadDisruption": self.allow_workload_disruption,
            "disableTLS": self.disable_tls,
            "nodeDrainTaintKey": self.node_drain_taint_key,
        }


def launcher_options(configuration: Mapping[str, Any] | None) -> dict[str, Any]:
    """The MigrationRequest ``options`` JSON (Go field names) from a ``migrationConfiguration``."""
    config = MigrationConfig.from_configuration(
        View.of(configuration, "migrationConfiguration", error=InvalidMigrationConfigurationError)
    )
    return {
        "Bandwidth": config.bandwidth_per_migration,
        "ProgressTimeout": config.progress_timeout,
        "CompletionTimeoutPerGiB": config.completion_timeout_per_gib,
        "UnsafeMigration": config.unsafe_migration_override,
        "AllowAutoConverge": config.allow_auto_converge,
        "AllowPostCopy": config.allow_post_copy,
        "AllowWorkloadDisruption": config.allow_workload_disruption,
    }
