"""Keeping the common-instancetypes bundle on the cluster (KubeVirt's ``apply/instancetypes.go``).

Once every component of the install is rolled out (the bundle's objects go through virt-api's
validating webhooks), each cluster instance type and preference of the bundle is created or made whole
again, stamped like every other installed object, and managed ones the bundle no longer has are
deleted. With ``spec.configuration.commonInstancetypesDeployment.enabled: false`` the managed ones are
deleted instead. Uninstalling needs nothing here: deleting the CRDs takes their objects with them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kubevirt.client import Resource
from kubevirt.log import get_logger
from kubevirt.virt_operator.apply import Applier
from kubevirt.virt_operator.resource.common_instancetypes import bundle_for, deploys_common_instancetypes
from kubevirt.virt_operator.resource.config import InstallConfig
from kubevirt.virt_operator.resource.metadata import stamp
from kubevirt.virt_operator.resources import COMMON_INSTANCETYPES
from kubevirt_api.view import JSON

_log = get_logger()


def common_instancetypes(kubevirt: Mapping[str, Any], config: InstallConfig) -> list[JSON]:
    """The bundle as this KubeVirt CR installs it: stamped, or nothing when the CR turns it off."""
    return [stamp(obj, config) for obj in bundle_for(kubevirt)]


class CommonInstancetypes:
    """Syncs the bundle through the operator's applier; ``synced`` says whether the cache of a bundle
    resource holds what the cluster has (its informer starts once its CRD exists)."""

    def __init__(self, applier: Applier, synced: Callable[[Resource], bool]) -> None:
        self._applier = applier
        self._synced = synced

    def sync(self, kubevirt: Mapping[str, Any], config: InstallConfig) -> bool:
        """True once the cluster holds the bundle as the CR wants it; False while the caches are not
        there yet to tell (the caller looks again shortly)."""
        if not all(self._synced(resource) for resource in COMMON_INSTANCETYPES):
            return False
        desired = common_instancetypes(kubevirt, config)
        written = self._applier.apply_all(desired, whole=True)
        deleted = self._applier.delete_stale(desired, COMMON_INSTANCETYPES)
        if written or deleted:
            _log.info(
                "common instancetypes synced",
                enabled=deploys_common_instancetypes(kubevirt),
                written=written,
                deleted=deleted,
            )
        return True
