"""``snapshot.kubevirt.io/v1beta1``: VM snapshots, snapshot contents and restores."""

from kubevirt_api.snapshot.v1beta1.types import *  # noqa: F403
