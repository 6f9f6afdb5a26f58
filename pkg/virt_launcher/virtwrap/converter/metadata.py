"""KubeVirt's metadata in the domain: the VMI UID and its termination grace period.

virt-launcher runs this configurator after the converter's own (:data:`CONFIGURATORS`), so a domain it
defines carries what virt-handler reads back; offline conversion (``virtctl render``) leaves the
metadata empty, as KubeVirt's converter does.
"""

from __future__ import annotations

from kubevirt_api.core.v1.constants import DEFAULT_GRACE_PERIOD_SECONDS

from .. import api
from .conversion import Conversion


def configure_metadata(c: Conversion) -> None:
    grace = c.vmi.spec.termination_grace_period_seconds
    c.domain.metadata.kubevirt.uid = c.uid
    c.domain.metadata.kubevirt.grace_period = api.GracePeriodMetadata(
        deletion_grace_period_seconds=DEFAULT_GRACE_PERIOD_SECONDS if grace is None else grace
    )
