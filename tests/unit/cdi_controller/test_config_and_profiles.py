"""The CDIConfig controller (status, the CDI CR's configAuthority, Deployed) and the StorageProfile
controller (one profile per class, claim property sets from spec or the capability table)."""

from __future__ import annotations

import pytest

from kubevirt.cdi.resources import STORAGE_PROFILES
from kubevirt.cdi_controller.storageprofile import InvalidClaimPropertySetError
from kubevirt.client.resources import CDI_CONFIGS, CDIS, STORAGE_CLASSES

from .harness import Cluster, cdi_status_rules, storage_class


def test_config_is_created_with_cdis_default_status() -> None:
    cluster = Cluster()
    cluster.add(STORAGE_CLASSES, storage_class())
    cluster.add(STORAGE_CLASSES, storage_class("slow", default=False))
    with cdi_status_rules():
        cluster.config.reconcile("config")
        cluster.sync()
        cluster.config.reconcile("config")
    config = cluster.get(CDI_CONFIGS, "config")
    assert config["status"] == {
        "preallocation": False,
        "scratchSpaceStorageClass": "local",
        "defaultPodResourceRequirements": {
            "limits": {"cpu": "750m", "memory": "600M"},
            "requests": {"cpu": "100m", "memory": "60M"},
        },
        "filesystemOverhead": {"global": "0.06", "storageClass": {"local": "0.06", "slow": "0.06"}},
        "importProxy": {"HTTPProxy": "", "HTTPSProxy": "", "noProxy": "", "trustedCAProxy": ""},
    }
    assert config["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "cdi-controller"


def test_cdi_cr_with_config_authority_sets_the_spec() -> None:
    cluster = Cluster()
    cluster.add(STORAGE_CLASSES, storage_class())
    cr = {
        "apiVersion": "cdi.kubevirt.io/v1beta1",
        "kind": "CDI",
        "metadata": {"name": "cdi", "annotations": {"cdi.kubevirt.io/configAuthority": ""}},
        "spec": {
            "config": {
                "uploadProxyURLOverride": "https://127.0.0.1:31001",
                "filesystemOverhead": {"global": "0.1", "storageClass": {"local": "0.2"}},
                "podResourceRequirements": {"limits": {"cpu": "1"}},
                "preallocation": True,
                "featureGates": ["HonorWaitForFirstConsumer"],
            }
        },
    }
    cluster.add(CDIS, cr)
    with cdi_status_rules():
        cluster.config.reconcile("config")
        cluster.sync()
        cluster.config.reconcile("config")
    config = cluster.get(CDI_CONFIGS, "config")
    assert config["spec"] == cr["spec"]["config"]
    status = config["status"]
    assert status["uploadProxyURL"] == "https://127.0.0.1:31001"
    assert status["filesystemOverhead"] == {"global": "0.1", "storageClass": {"local": "0.2"}}
    assert status["defaultPodResourceRequirements"]["limits"] == {"cpu": "1", "memory": "600M"}
    assert status["preallocation"] is True
    deployed = cluster.get(CDIS, "cdi")["status"]
    assert deployed["phase"] == "Deployed"
    assert [(c["type"], c["status"]) for c in deployed["conditions"]] == [
        ("Available", "True"),
        ("Progressing", "False"),
        ("Degraded", "False"),
    ]
    assert ("Normal", "DeployCompleted", "Deployment Completed") in cluster.events.seen


def test_invalid_global_overhead_falls_back_to_cdis_default() -> None:
    cluster = Cluster()
    cluster.add(
        CDI_CONFIGS, {"metadata": {"name": "config"}, "spec": {"filesystemOverhead": {"global": "1.5"}}}
    )
    with cdi_status_rules():
        cluster.config.reconcile("config")
    assert cluster.get(CDI_CONFIGS, "config")["status"]["filesystemOverhead"]["global"] == "0.06"


def test_profile_of_the_local_csi_class() -> None:
    cluster = Cluster()
    cluster.add(STORAGE_CLASSES, storage_class())
    cluster.profiles.reconcile("local")
    profile = cluster.get(STORAGE_PROFILES, "local")
    assert profile["status"]["storageClass"] == "local"
    assert profile["status"]["provisioner"] == "hostpath.csi.kubevirt-py.io"
    assert profile["status"]["cloneStrategy"] == "copy"
    sets = profile["status"]["claimPropertySets"]
    assert sets[0] == {"accessModes": ["ReadWriteOnce"], "volumeMode": "Filesystem"}
    assert {"accessModes": ["ReadWriteMany"], "volumeMode": "Block"} in sets


def test_unknown_provisioner_gets_no_claim_properties_and_spec_wins() -> None:
    cluster = Cluster()
    cluster.add(STORAGE_CLASSES, storage_class("manual", provisioner="kubernetes.io/no-provisioner"))
    cluster.profiles.reconcile("manual")
    assert cluster.get(STORAGE_PROFILES, "manual")["status"]["claimPropertySets"] == []
    wanted = [{"accessModes": ["ReadWriteMany"], "volumeMode": "Filesystem"}]
    with cdi_status_rules():
        cluster.sync()
        profile = cluster.get(STORAGE_PROFILES, "manual")
        profile["spec"] = {"claimPropertySets": wanted}
        cluster.api.update(STORAGE_PROFILES, None, profile)
        cluster.sync()
        cluster.profiles.reconcile("manual")
    assert cluster.get(STORAGE_PROFILES, "manual")["status"]["claimPropertySets"] == wanted


def test_incomplete_claim_property_set_is_refused() -> None:
    cluster = Cluster()
    cluster.add(STORAGE_CLASSES, storage_class())
    cluster.add(
        STORAGE_PROFILES,
        {"metadata": {"name": "local"}, "spec": {"claimPropertySets": [{"accessModes": ["ReadWriteOnce"]}]}},
    )
    with pytest.raises(InvalidClaimPropertySetError, match="both volume mode and access modes"):
        cluster.profiles.reconcile("local")


def test_profile_goes_with_its_class() -> None:
    cluster = Cluster()
    cluster.add(STORAGE_CLASSES, storage_class())
    cluster.profiles.reconcile("local")
    cluster.api.delete(STORAGE_CLASSES, None, "local")
    cluster.sync()
    cluster.profiles.reconcile("local")
    assert cluster.api.objects_of(STORAGE_PROFILES) == []
