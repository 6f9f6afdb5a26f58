"""Reading the KubeVirt CR through one typed view: a value of the wrong type (which KubeVirt's CRD schema
refuses) rejects the configuration naming its field; every value KubeVirt accepts reads as it always did."""

from __future__ import annotations

import re
from typing import Any

import pytest

from kubevirt.virt_config import ClusterConfig, DomainSettings, InvalidConfigurationError, LauncherSettings
from kubevirt.virt_config.launcher import SeccompProfile
from kubevirt.virt_config.migrations import (
    InvalidMigrationConfigurationError,
    MigrationConfig,
    launcher_options,
)
from kubevirt.virt_config.tls import InvalidTLSConfigurationError, TLSConfiguration
from kubevirt_api.view import View

JSON = dict[str, Any]


def read(configuration: JSON, **metadata: Any) -> ClusterConfig:
    return ClusterConfig.from_kubevirt(
        {"metadata": {"namespace": "kubevirt", **metadata}, "spec": {"configuration": configuration}}
    )


@pytest.mark.parametrize(
    ("configuration", "message"),
    [
        # config.py
        ({"evictionStrategy": 5}, "spec.configuration.evictionStrategy: must be a string"),
        (
            {"developerConfiguration": {"featureGates": ["Snapshot", 1]}},
            "spec.configuration.developerConfiguration.featureGates[1]: must be a string",
        ),
        (
            {"architectureConfiguration": {"arm64": "virt*"}},
            "spec.configuration.architectureConfiguration.arm64: must be an object",
        ),
        (
            {"architectureConfiguration": {"amd64": {"emulatedMachines": ["q35*", 7]}}},
            "spec.configuration.architectureConfiguration.amd64.emulatedMachines[1]: must be a string",
        ),
        (
            {"architectureConfiguration": {"defaultArchitecture": 64}},
            "spec.configuration.architectureConfiguration.defaultArchitecture: must be a string",
        ),
        (
            {"ksmConfiguration": {"nodeLabelSelector": "ksm=on"}},
            "spec.configuration.ksmConfiguration.nodeLabelSelector: must be an object",
        ),
        (
            {"instancetype": {"referencePolicy": 1}},
            "spec.configuration.instancetype.referencePolicy: must be a string",
        ),
        (
            {"network": {"permitBridgeInterfaceOnPodNetwork": "yes"}},
            "spec.configuration.network.permitBridgeInterfaceOnPodNetwork: must be true or false",
        ),
        # launcher.py
        (
            {"developerConfiguration": {"useEmulation": "true"}},
            "spec.configuration.developerConfiguration.useEmulation: must be true or false",
        ),
        (
            {"developerConfiguration": {"cpuAllocationRatio": "4"}},
            "spec.configuration.developerConfiguration.cpuAllocationRatio: must be an integer, got '4'",
        ),
        (
            {"developerConfiguration": {"memoryOvercommit": 1.5}},
            "spec.configuration.developerConfiguration.memoryOvercommit: must be an integer, got '1.5'",
        ),
        (
            {"developerConfiguration": {"logVerbosity": {"virtLauncher": True}}},
            "spec.configuration.developerConfiguration.logVerbosity.virtLauncher: must be an integer",
        ),
        (
            {"developerConfiguration": {"nodeSelectors": {"pool": 1}}},
            "spec.configuration.developerConfiguration.nodeSelectors.pool: must be a string",
        ),
        (
            {"developerConfiguration": {"diskVerification": "1Gi"}},
            "spec.configuration.developerConfiguration.diskVerification: must be an object",
        ),
        ({"imagePullPolicy": 1}, "spec.configuration.imagePullPolicy: must be a string"),
        ({"defaultRuntimeClass": ["kata"]}, "spec.configuration.defaultRuntimeClass: must be a string"),
        ({"ovmfPath": 1}, "spec.configuration.ovmfPath: must be a string"),
        (
            {"additionalGuestMemoryOverheadRatio": 1.2},
            "spec.configuration.additionalGuestMemoryOverheadRatio: must be a string",
        ),
        (
            {"virtualMachineOptions": {"disableSerialConsoleLog": True}},
            "spec.configuration.virtualMachineOptions.disableSerialConsoleLog: must be an object",
        ),
        (
            {
                "seccompConfiguration": {
                    "virtualMachineInstanceProfile": {"customProfile": {"localhostProfile": 1}}
                }
            },
            "spec.configuration.seccompConfiguration.virtualMachineInstanceProfile.customProfile"
            ".localhostProfile: must be a string",
        ),
        (
            {
                "seccompConfiguration": {
                    "virtualMachineInstanceProfile": {"customProfile": {"runtimeDefaultProfile": "yes"}}
                }
            },
            "spec.configuration.seccompConfiguration.virtualMachineInstanceProfile.customProfile"
            ".runtimeDefaultProfile: must be true or false",
        ),
        # domain.py
        ({"smbios": "acme"}, "spec.configuration.smbios: must be an object"),
        ({"smbios": {"sku": 1}}, "spec.configuration.smbios.sku: must be a string"),
        ({"memBalloonStatsPeriod": "10"}, "spec.configuration.memBalloonStatsPeriod: must be an integer"),
        ({"network": {"binding": []}}, "spec.configuration.network.binding: must be an object"),
        (
            {"network": {"binding": {"passt": "managedTap"}}},
            "spec.configuration.network.binding.passt: must be an object",
        ),
        (
            {"network": {"binding": {"passt": {"domainAttachmentType": 1}}}},
            "spec.configuration.network.binding.passt.domainAttachmentType: must be a string",
        ),
        (
            {"virtualMachineOptions": {"disableFreePageReporting": "yes"}},
            "spec.configuration.virtualMachineOptions.disableFreePageReporting: must be an object",
        ),
        # migrations.py
        ({"migrations": "fast"}, "spec.configuration.migrations: must be an object"),
        (
            {"migrations": {"progressTimeout": "150"}},
            "spec.configuration.migrations.progressTimeout: must be an integer, got '150'",
        ),
        (
            {"migrations": {"parallelMigrationsPerCluster": -1}},
            "spec.configuration.migrations.parallelMigrationsPerCluster: must be at least 0, got -1",
        ),
        (
            {"migrations": {"allowPostCopy": "yes"}},
            "spec.configuration.migrations.allowPostCopy: must be true or false",
        ),
        (
            {"migrations": {"nodeDrainTaintKey": 1}},
            "spec.configuration.migrations.nodeDrainTaintKey: must be a string",
        ),
        (
            {"migrations": {"bandwidthPerMigration": True}},
            "spec.configuration.migrations.bandwidthPerMigration: must be a quantity",
        ),
        (
            {"migrations": {"bandwidthPerMigration": 1.5}},
            "spec.configuration.migrations.bandwidthPerMigration: must be a quantity",
        ),
        # tls.py
        ({"tlsConfiguration": "modern"}, "spec.configuration.tlsConfiguration: must be an object"),
        (
            {"tlsConfiguration": {"minTLSVersion": 13}},
            "spec.configuration.tlsConfiguration.minTLSVersion: must be a string",
        ),
        (
            {"tlsConfiguration": {"minTLSVersion": "TLS1.3"}},
            "spec.configuration.tlsConfiguration.minTLSVersion: unsupported value 'TLS1.3'",
        ),
        (
            {"tlsConfiguration": {"ciphers": ["TLS_AES_128_GCM_SHA256", None]}},
            "spec.configuration.tlsConfiguration.ciphers[1]: must be a string",
        ),
    ],
)
def test_a_mistyped_value_is_refused_naming_its_field(configuration: JSON, message: str) -> None:
    with pytest.raises(InvalidConfigurationError, match=f"^{re.escape(message)}"):
        read(configuration)


@pytest.mark.parametrize(
    ("kubevirt", "message"),
    [
        ({"spec": "configuration"}, "spec: must be an object"),
        ({"spec": {"configuration": []}}, "spec.configuration: must be an object"),
        ({"metadata": {"annotations": {"kubevirt.io/vga-display-efi-x86": True}}}, "metadata.annotations."),
    ],
)
def test_a_mistyped_cr_is_refused_naming_its_field(kubevirt: JSON, message: str) -> None:
    with pytest.raises(InvalidConfigurationError, match=f"^{re.escape(message)}"):
        ClusterConfig.from_kubevirt(kubevirt)


NULL_SECTIONS = dict.fromkeys(
    (
        "developerConfiguration",
        "architectureConfiguration",
        "network",
        "obsoleteCPUModels",
        "ksmConfiguration",
        "instancetype",
        "migrations",
        "tlsConfiguration",
        "smbios",
        "virtualMachineOptions",
        "seccompConfiguration",
        "vmRolloutStrategy",
        "evictionStrategy",
        "memBalloonStatsPeriod",
        "imagePullPolicy",
        "additionalGuestMemoryOverheadRatio",
    )
)


@pytest.mark.parametrize(
    "kubevirt",
    [
        {},
        {"spec": None},
        {"spec": {"configuration": None}},
        {"metadata": None, "spec": {"configuration": NULL_SECTIONS}},
        {"spec": {"configuration": {"developerConfiguration": {"featureGates": None}, "migrations": {}}}},
    ],
    ids=["no-spec", "null-spec", "null-configuration", "null-sections", "null-fields"],
)
def test_absent_and_null_values_read_as_kubevirts_defaults(kubevirt: JSON) -> None:
    assert ClusterConfig.from_kubevirt(kubevirt) == ClusterConfig()


def test_empty_strings_mean_the_default_where_they_did() -> None:
    config = read(
        {
            "architectureConfiguration": {"defaultArchitecture": ""},
            "imagePullPolicy": "",
            "defaultRuntimeClass": "",
            "ovmfPath": "",
            "smbios": {"manufacturer": "", "product": "", "family": ""},
            "migrations": {"nodeDrainTaintKey": ""},
            "tlsConfiguration": {"minTLSVersion": ""},
        }
    )
    assert config == ClusterConfig()
    # Where an empty string is a value of its own, it is kept.
    config = read({"evictionStrategy": "", "additionalGuestMemoryOverheadRatio": ""})
    assert config.eviction_strategy == ""
    assert config.launcher.additional_guest_memory_overhead_ratio == ""


@pytest.mark.parametrize(
    "configuration",
    [{"vmRolloutStrategy": ""}, {"instancetype": {"referencePolicy": ""}}],
    ids=["rollout-strategy", "reference-policy"],
)
def test_an_empty_enum_value_is_still_refused(configuration: JSON) -> None:
    with pytest.raises(InvalidConfigurationError, match="unknown"):
        read(configuration)


def test_well_typed_but_unusable_values_keep_the_defaults() -> None:
    config = read(
        {
            "developerConfiguration": {
                "cpuAllocationRatio": 0,
                "memoryOvercommit": -5,
                "logVerbosity": {"virtLauncher": 0},
                "diskVerification": {"memoryLimit": "lots"},
            },
            "memBalloonStatsPeriod": 2**32,
            "network": {"binding": {"custom": {"sidecarImage": "x"}, "empty": {"domainAttachmentType": ""}}},
        }
    )
    assert config.launcher == LauncherSettings()
    assert config.domain == DomainSettings()


def test_every_field_kubevirt_accepts_reads_as_before() -> None:
    config = read(
        {
            "developerConfiguration": {
                "featureGates": ["Snapshot", "LiveMigration"],
                "useEmulation": False,
                "cpuAllocationRatio": 4.0,  # a JSON number with no fraction is the integer Go reads
                "memoryOvercommit": 150,
                "logVerbosity": {"virtLauncher": 4},
                "diskVerification": {"memoryLimit": 1048576},
                "nodeSelectors": {"pool": "vms"},
            },
            "vmRolloutStrategy": "Stage",
            "evictionStrategy": "LiveMigrate",
            "architectureConfiguration": {
                "defaultArchitecture": "arm64",
                "arm64": {"emulatedMachines": ["virt-9*"]},
                "amd64": {"emulatedMachines": []},
                "riscv64": {"emulatedMachines": ["virt"]},
            },
            "network": {
                "permitBridgeInterfaceOnPodNetwork": False,
                "binding": {"passt": {"domainAttachmentType": "managedTap"}, "sidecar": None},
            },
            "obsoleteCPUModels": {"486": True, "pentium": False},
            "ksmConfiguration": {"nodeLabelSelector": {}},
            "instancetype": {"referencePolicy": "expand"},
            "imagePullPolicy": "Always",
            "defaultRuntimeClass": "kata",
            "ovmfPath": "/ovmf",
            "additionalGuestMemoryOverheadRatio": "1.5",
            "virtualMachineOptions": {"disableSerialConsoleLog": {}, "disableFreePageReporting": {}},
            "seccompConfiguration": {
                "virtualMachineInstanceProfile": {"customProfile": {"runtimeDefaultProfile": True}}
            },
            "smbios": {"manufacturer": "Acme", "version": "1"},
            "memBalloonStatsPeriod": 0,
            "migrations": {
                "parallelMigrationsPerCluster": 0,
                "progressTimeout": 300.0,
                "bandwidthPerMigration": 67108864,
                "allowPostCopy": True,
                "disableTLS": None,
                "nodeDrainTaintKey": "drain-me",
            },
            "tlsConfiguration": {"minTLSVersion": "VersionTLS12", "ciphers": []},
        },
        namespace="kv",
    )
    assert config.feature_gates == frozenset({"Snapshot", "LiveMigration"})
    assert config.enabled("NUMA")  # graduated gates count as enabled
    assert not config.enabled("HostDisk")
    assert (config.rollout_strategy, config.eviction_strategy) == ("Stage", "LiveMigrate")
    assert config.default_architecture == "arm64"
    assert config.machines_for("") == ("virt-9*",)
    assert config.machines_for("amd64") == ("q35*", "pc-q35*")  # an empty list keeps the default
    assert "riscv64" not in config.emulated_machines
    assert config.permit_bridge_interface_on_pod_network is False
    assert config.obsolete_cpu_models == frozenset({"486", "pentium"})
    assert config.ksm_node_label_selector == {}  # an empty selector selects every node
    assert config.instancetype_reference_policy == "expand"
    assert config.install_namespace == "kv"
    assert config.launcher == LauncherSettings(
        cpu_allocation_ratio=4,
        memory_overcommit_percent=150,
        additional_guest_memory_overhead_ratio="1.5",
        launcher_log_verbosity=4,
        image_pull_policy="Always",
        disk_verification_memory_limit_bytes=1048576,
        node_selectors={"pool": "vms"},
        default_runtime_class="kata",
        serial_console_log_disabled=True,
        ovmf_path="/ovmf",
        seccomp_profile=SeccompProfile("RuntimeDefault"),
    )
    assert config.domain.smbios.manufacturer == "Acme"
    assert (config.domain.smbios.version, config.domain.smbios.product) == ("1", "None")
    assert config.domain.mem_balloon_stats_period == 0
    assert config.domain.free_page_reporting_disabled
    assert config.domain.binding_attachments == {"passt": "managedTap"}
    assert config.migrations == MigrationConfig(
        parallel_migrations_per_cluster=0,
        progress_timeout=300,
        bandwidth_per_migration="67108864",
        allow_post_copy=True,
        node_drain_taint_key="drain-me",
    )
    assert config.tls == TLSConfiguration("VersionTLS12")


def test_the_install_namespace_given_wins_over_the_crs() -> None:
    kubevirt = {"metadata": {"namespace": "kv"}}
    assert ClusterConfig.from_kubevirt(kubevirt, install_namespace="ours").install_namespace == "ours"
    assert ClusterConfig.from_kubevirt({"metadata": {"namespace": ""}}).install_namespace == "kubevirt"


@pytest.mark.parametrize(
    ("written", "kept"), [("64Mi", "64Mi"), (0, "0"), ("", ""), (None, "0Mi"), ("fast", "fast")]
)
def test_the_migration_bandwidth_is_kept_as_written(written: object, kept: str) -> None:
    assert read({"migrations": {"bandwidthPerMigration": written}}).migrations.bandwidth_per_migration == kept


def test_the_migration_and_tls_readers_raise_their_own_errors_for_any_view() -> None:
    with pytest.raises(InvalidMigrationConfigurationError, match=r"^m\.disableTLS: must be true or false"):
        MigrationConfig.from_configuration(View.of({"disableTLS": 1}, "m"))
    with pytest.raises(InvalidTLSConfigurationError, match=r"^t\.ciphers: must be a list"):
        TLSConfiguration.from_configuration(View.of({"ciphers": "ALL"}, "t"))


def test_the_launchers_migration_options_come_from_the_status_copy() -> None:
    config = MigrationConfig(bandwidth_per_migration="1Mi", allow_auto_converge=True, progress_timeout=20)
    options = launcher_options(config.to_status())
    assert (options["Bandwidth"], options["ProgressTimeout"], options["AllowAutoConverge"]) == (
        "1Mi",
        20,
        True,
    )
    assert launcher_options(None) == launcher_options({})
    assert launcher_options(None)["Bandwidth"] == "0Mi"
    with pytest.raises(
        InvalidMigrationConfigurationError,
        match=r"^migrationConfiguration\.progressTimeout: must be an integer",
    ):
        launcher_options({"progressTimeout": "20"})
