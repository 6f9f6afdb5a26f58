"""``migrations.kubevirt.io/v1alpha1``: MigrationPolicy."""

from kubevirt_api.migrations.v1alpha1.types import *  # noqa: F403
