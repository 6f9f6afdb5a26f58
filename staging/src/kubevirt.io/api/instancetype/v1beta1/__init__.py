"""``instancetype.kubevirt.io/v1beta1``: instance types and preferences (namespaced and cluster-wide)."""

from kubevirt_api.instancetype.v1beta1.types import *  # noqa: F403
