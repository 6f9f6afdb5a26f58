"""The cluster configuration: KubeVirt CR values over the defaults, and the last valid one kept."""

from __future__ import annotations

from typing import Any

import pytest

from kubevirt.virt_config import GRADUATED_FEATURE_GATES, ClusterConfig, InvalidConfigurationError
from kubevirt.virt_config.follower import ConfigFollower
from kubevirt.virt_config.tls import TLSConfiguration


def kubevirt_cr(configuration: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"namespace": "kubevirt"}, "spec": {"configuration": configuration}}


class Lister:
    def __init__(self, *answers: dict[str, Any]) -> None:
        self.answers = list(answers)

    def list_kubevirts(self, namespace: str | None) -> list[dict[str, Any]]:
        return [self.answers.pop(0)]


def test_graduated_gates_count_as_enabled_without_being_listed() -> None:
    config = ClusterConfig()
    assert all(config.enabled(gate) for gate in GRADUATED_FEATURE_GATES)
    assert not config.enabled("Snapshot")


@pytest.mark.parametrize(
    ("configuration", "field"),
    [
        ({"vmRolloutStrategy": "Sometimes"}, "spec.configuration.vmRolloutStrategy"),
        ({"developerConfiguration": {"featureGates": "Snapshot"}}, "featureGates"),
        ({"network": {"permitBridgeInterfaceOnPodNetwork": "yes"}}, "permitBridgeInterfaceOnPodNetwork"),
        ({"developerConfiguration": []}, "spec.configuration.developerConfiguration"),
        ({"instancetype": {"referencePolicy": "copy"}}, "spec.configuration.instancetype.referencePolicy"),
        ({"tlsConfiguration": "modern"}, "spec.configuration.tlsConfiguration"),
        ({"tlsConfiguration": {"minTLSVersion": "TLS1.3"}}, "tlsConfiguration.minTLSVersion"),
        ({"tlsConfiguration": {"ciphers": "TLS_AES_128_GCM_SHA256"}}, "tlsConfiguration.ciphers"),
    ],
)
def test_an_invalid_configuration_is_refused_naming_the_field(
    configuration: dict[str, Any], field: str
) -> None:
    with pytest.raises(InvalidConfigurationError, match=field):
        ClusterConfig.from_kubevirt(kubevirt_cr(configuration))


def test_the_tls_configuration_is_read_for_the_listeners() -> None:
    assert ClusterConfig().tls == TLSConfiguration()
    configured = ClusterConfig.from_kubevirt(
        kubevirt_cr({"tlsConfiguration": {"minTLSVersion": "VersionTLS12", "ciphers": ["A", "B"]}})
    )
    # Names are kept as written: the listeners skip the ones Go does not know, as KubeVirt's do.
    assert configured.tls == TLSConfiguration("VersionTLS12", ("A", "B"))
    assert configured != ClusterConfig.from_kubevirt(kubevirt_cr({})), "a change must reach the followers"


def test_the_instancetype_reference_policy() -> None:
    assert ClusterConfig().instancetype_reference_policy == "reference"
    configured = ClusterConfig.from_kubevirt(kubevirt_cr({"instancetype": {"referencePolicy": "expandAll"}}))
    assert configured.instancetype_reference_policy == "expandAll"


def test_the_follower_keeps_the_last_valid_configuration() -> None:
    published: list[ClusterConfig] = []
    lister = Lister(
        kubevirt_cr({"developerConfiguration": {"featureGates": ["Snapshot"]}}),
        kubevirt_cr({"vmRolloutStrategy": "Sometimes"}),
        kubevirt_cr({"vmRolloutStrategy": "Stage"}),
    )
    follower = ConfigFollower("kubevirt", lister=lister)
    follower.on_change(lambda: published.append(follower.current()))
    assert follower.refresh()
    assert follower.current().enabled("Snapshot")
    assert not follower.refresh()  # invalid: the Snapshot configuration stays
    assert follower.current().enabled("Snapshot")
    assert follower.refresh()
    assert follower.current().rollout_strategy == "Stage"
    assert len(published) == 2


def test_the_node_labeller_and_ksm_settings_are_read() -> None:
    config = ClusterConfig.from_kubevirt(
        {
            "spec": {
                "configuration": {
                    "obsoleteCPUModels": {"EPYC": True, "Westmere": False},
                    "ksmConfiguration": {"nodeLabelSelector": {"matchLabels": {"ksm": "on"}}},
                }
            }
        }
    )
    assert config.obsolete_cpu_models == frozenset({"EPYC", "Westmere"})
    assert config.ksm_node_label_selector == {"matchLabels": {"ksm": "on"}}
    default = ClusterConfig.from_kubevirt({"spec": {"configuration": {}}})
    assert (default.obsolete_cpu_models, default.ksm_node_label_selector) == (None, None)
    with pytest.raises(
        InvalidConfigurationError, match=r"spec\.configuration\.obsoleteCPUModels: must be an object"
    ):
        ClusterConfig.from_kubevirt({"spec": {"configuration": {"obsoleteCPUModels": ["EPYC"]}}})


def test_the_pvc_space_settings_for_the_images_virt_handler_makes() -> None:
    assert (ClusterConfig().less_pvc_space_toleration, ClusterConfig().minimum_reserve_pvc_bytes) == (
        10,
        131072,
    )
    developer = {"pvcTolerateLessSpaceUpToPercent": 25, "minimumReservePVCBytes": 1 << 20}
    configured = ClusterConfig.from_kubevirt(kubevirt_cr({"developerConfiguration": developer}))
    assert (configured.less_pvc_space_toleration, configured.minimum_reserve_pvc_bytes) == (25, 1 << 20)
    # KubeVirt's CR leaves zero values out: zero means its default.
    zeros = {"pvcTolerateLessSpaceUpToPercent": 0, "minimumReservePVCBytes": 0}
    defaulted = ClusterConfig.from_kubevirt(kubevirt_cr({"developerConfiguration": zeros}))
    assert (defaulted.less_pvc_space_toleration, defaulted.minimum_reserve_pvc_bytes) == (10, 131072)
    assert (
        ClusterConfig.from_kubevirt(
            kubevirt_cr({"developerConfiguration": {"pvcTolerateLessSpaceUpToPercent": 100}})
        ).less_pvc_space_toleration
        == 100
    )


@pytest.mark.parametrize(
    ("developer", "message"),
    [
        (
            {"pvcTolerateLessSpaceUpToPercent": 101},
            r"developerConfiguration\.pvcTolerateLessSpaceUpToPercent: invalid lessPVCSpaceToleration in "
            r"ConfigMap: 101",
        ),
        (
            {"pvcTolerateLessSpaceUpToPercent": -1},
            r"pvcTolerateLessSpaceUpToPercent: invalid lessPVCSpaceToleration in ConfigMap: -1",
        ),
        ({"pvcTolerateLessSpaceUpToPercent": "10%"}, r"pvcTolerateLessSpaceUpToPercent: must be an integer"),
        ({"minimumReservePVCBytes": -1}, r"minimumReservePVCBytes: must be at least 0"),
    ],
)
def test_a_pvc_space_setting_kubevirt_refuses_invalidates_the_configuration(
    developer: dict[str, Any], message: str
) -> None:
    """As KubeVirt's config validation: the configuration is not taken (the follower keeps the last one)."""
    with pytest.raises(InvalidConfigurationError, match=message):
        ClusterConfig.from_kubevirt(kubevirt_cr({"developerConfiguration": developer}))


def test_the_supported_guest_agent_versions_default_when_unset_or_empty() -> None:
    defaults = ("2.*", "3.*", "4.*", "5.*")
    assert ClusterConfig().supported_guest_agent_versions == defaults
    assert ClusterConfig.from_kubevirt(kubevirt_cr({})).supported_guest_agent_versions == defaults
    empty = kubevirt_cr({"supportedGuestAgentVersions": []})
    assert ClusterConfig.from_kubevirt(empty).supported_guest_agent_versions == defaults
    listed = kubevirt_cr({"supportedGuestAgentVersions": ["7.*"]})
    assert ClusterConfig.from_kubevirt(listed).supported_guest_agent_versions == ("7.*",)
