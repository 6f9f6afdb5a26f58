"""``kubevirt.io/v1``: every type, re-exported from the topic modules."""

from kubevirt_api.core.v1.domain import *  # noqa: F403
from kubevirt_api.core.v1.kubevirt import *  # noqa: F403
from kubevirt_api.core.v1.migration import *  # noqa: F403
from kubevirt_api.core.v1.networks import *  # noqa: F403
from kubevirt_api.core.v1.preset import *  # noqa: F403
from kubevirt_api.core.v1.probes import *  # noqa: F403
from kubevirt_api.core.v1.replicaset import *  # noqa: F403
from kubevirt_api.core.v1.subresources import *  # noqa: F403
from kubevirt_api.core.v1.vm import *  # noqa: F403
from kubevirt_api.core.v1.vmi import *  # noqa: F403
from kubevirt_api.core.v1.volumes import *  # noqa: F403
