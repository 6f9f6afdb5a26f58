"""How Go's ``encoding/json`` lays out each API type, for :func:`kubevirt_api.gojson.to_go_json`.

One entry per type: its JSON fields in Go's order, each as ``<json name> <kind>`` with ``?`` when the Go
field is ``omitempty``. Kinds: ``s`` string, ``i`` integer, ``f`` float, ``b`` bool, ``l`` slice, ``m`` map,
``a`` free-form, ``p`` pointer, ``S`` struct value, ``S0`` raw JSON object, ``T`` metav1.Time value,
``Q`` Quantity value, ``I`` IntOrString value, ``D`` metav1.Duration value. Keys are module paths below
``kubevirt_api``. A test keeps this table and the models in step.
"""

from __future__ import annotations

from typing import Final

GO_LAYOUT: Final[dict[str, str]] = {
    "cdi.v1beta1.CDI": "kind s? apiVersion s? metadata S? spec S status S",
    "cdi.v1beta1.CDICertConfig": "ca p? server p? client p?",
    "cdi.v1beta1.CDIComponentConfig": (
        "nodeSelector m? affinity p? tolerations l? deploymentReplicas p? apiServerReplicas p? "
        "uploadProxyReplicas p?"
    ),
    "cdi.v1beta1.CDICondition": (
        "type s status s reason s? message s? lastHeartbeatTime T lastTransitionTime T"
    ),
    "cdi.v1beta1.CDIConfig": "kind s? apiVersion s? metadata S? spec S status S?",
    "cdi.v1beta1.CDIConfigList": "kind s? apiVersion s? metadata S items l",
    "cdi.v1beta1.CDIConfigSpec": (
        "uploadProxyURLOverride p? importProxy p? scratchSpaceStorageClass p? "
        "podResourceRequirements p? featureGates l? filesystemOverhead p? preallocation p? "
        "insecureRegistries l? dataVolumeTTLSeconds p? tlsSecurityProfile p? imagePullSecrets l? "
        "logVerbosity p?"
    ),
    "cdi.v1beta1.CDIConfigStatus": (
        "uploadProxyURL p? uploadProxyCA p? importProxy p? scratchSpaceStorageClass s? "
        "defaultPodResourceRequirements p? filesystemOverhead p? preallocation b? imagePullSecrets l?"
    ),
    "cdi.v1beta1.CDICustomizeComponents": "patches l? flags p?",
    "cdi.v1beta1.CDIFlags": "api m? controller m? uploadProxy m?",
    "cdi.v1beta1.CDIList": "kind s? apiVersion s? metadata S items l",
    "cdi.v1beta1.CDISpec": (
        "imagePullPolicy s? uninstallStrategy p? infra S? workload S? customizeComponents S? "
        "cloneStrategyOverride p? config p? certConfig p? priorityClass p?"
    ),
    "cdi.v1beta1.CDIStatus": "phase s? conditions l? operatorVersion s? targetVersion s? observedVersion s?",
    "cdi.v1beta1.ClaimPropertySet": "accessModes l volumeMode p",
    "cdi.v1beta1.CustomTLSProfile": "ciphers l minTLSVersion s",
    "cdi.v1beta1.DataSource": "kind s? apiVersion s? metadata S? spec S status S?",
    "cdi.v1beta1.DataSourceCondition": (
        "type s status s lastTransitionTime T? lastHeartbeatTime T? reason s? message s?"
    ),
    "cdi.v1beta1.DataSourceList": "kind s? apiVersion s? metadata S items l",
    "cdi.v1beta1.DataSourceRefSourceDataSource": "namespace s name s",
    "cdi.v1beta1.DataSourceSource": "pvc p? snapshot p? dataSource p?",
    "cdi.v1beta1.DataSourceSpec": "source S",
    "cdi.v1beta1.DataSourceStatus": "source S? conditions l?",
    "cdi.v1beta1.DataVolume": "kind s? apiVersion s? metadata S? spec S status S?",
    "cdi.v1beta1.DataVolumeBlankImage": "",
    "cdi.v1beta1.DataVolumeCheckpoint": "previous s current s",
    "cdi.v1beta1.DataVolumeCondition": (
        "type s status s lastTransitionTime T? lastHeartbeatTime T? reason s? message s?"
    ),
    "cdi.v1beta1.DataVolumeList": "kind s? apiVersion s? metadata S items l",
    "cdi.v1beta1.DataVolumeSource": (
        "http p? s3 p? gcs p? registry p? pvc p? upload p? blank p? imageio p? vddk p? snapshot p?"
    ),
    "cdi.v1beta1.DataVolumeSourceGCS": "url s secretRef s?",
    "cdi.v1beta1.DataVolumeSourceHTTP": (
        "url s secretRef s? certConfigMap s? extraHeaders l? secretExtraHeaders l?"
    ),
    "cdi.v1beta1.DataVolumeSourceImageIO": "url s diskId s secretRef s? certConfigMap s?",
    "cdi.v1beta1.DataVolumeSourcePVC": "namespace s name s",
    "cdi.v1beta1.DataVolumeSourceRef": "kind s namespace p? name s",
    "cdi.v1beta1.DataVolumeSourceRegistry": (
        "url p? imageStream p? pullMethod p? secretRef p? certConfigMap p? platform p?"
    ),
    "cdi.v1beta1.DataVolumeSourceS3": "url s secretRef s? certConfigMap s?",
    "cdi.v1beta1.DataVolumeSourceSnapshot": "namespace s name s",
    "cdi.v1beta1.DataVolumeSourceUpload": "",
    "cdi.v1beta1.DataVolumeSourceVDDK": (
        "url s? uuid s? backingFile s? thumbprint s? secretRef s? initImageURL s? extraArgs s?"
    ),
    "cdi.v1beta1.DataVolumeSpec": (
        "source p? sourceRef p? pvc p? storage p? priorityClassName s? contentType s? "
        "checkpoints l? finalCheckpoint b? preallocation p?"
    ),
    "cdi.v1beta1.DataVolumeStatus": "claimName s? phase s? progress s? restartCount i? conditions l?",
    "cdi.v1beta1.FilesystemOverhead": "global s? storageClass m?",
    "cdi.v1beta1.ImportProxy": "HTTPProxy p? HTTPSProxy p? noProxy p? trustedCAProxy p?",
    "cdi.v1beta1.IntermediateTLSProfile": "",
    "cdi.v1beta1.ModernTLSProfile": "",
    "cdi.v1beta1.OldTLSProfile": "",
    "cdi.v1beta1.PlatformOptions": "architecture s?",
    "cdi.v1beta1.StorageProfile": "kind s? apiVersion s? metadata S? spec S status S?",
    "cdi.v1beta1.StorageProfileList": "kind s? apiVersion s? metadata S items l",
    "cdi.v1beta1.StorageProfileSpec": (
        "cloneStrategy p? claimPropertySets l? dataImportCronSourceFormat p? snapshotClass p?"
    ),
    "cdi.v1beta1.StorageProfileStatus": (
        "storageClass p? provisioner p? cloneStrategy p? claimPropertySets l? "
        "dataImportCronSourceFormat p? snapshotClass p?"
    ),
    "cdi.v1beta1.StorageSpec": (
        "accessModes l? selector p? resources S? volumeName s? storageClassName p? "
        "volumeMode p? dataSource p? dataSourceRef p?"
    ),
    "cdi.v1beta1.TLSSecurityProfile": "type s old p? intermediate p? modern p? custom p?",
    "core.v1.domain.ACPI": "slicNameRef s? msdmNameRef s?",
    "core.v1.domain.BIOS": "useSerial p?",
    "core.v1.domain.BlockSize": "custom p? matchVolume p?",
    "core.v1.domain.Bootloader": "bios p? efi p?",
    "core.v1.domain.CDRomTarget": "bus s? readonly p? tray s?",
    "core.v1.domain.CPU": (
        "cores i? sockets i? maxSockets i? threads i? model s? features l? "
        "dedicatedCpuPlacement b? numa p? isolateEmulatorThread b? realtime p?"
    ),
    "core.v1.domain.CPUFeature": "name s policy s?",
    "core.v1.domain.Chassis": "manufacturer s? version s? serial s? asset s? sku s?",
    "core.v1.domain.ClaimRequest": "claimName p? requestName p?",
    "core.v1.domain.ClientPassthroughDevices": "",
    "core.v1.domain.Clock": "utc p? timezone p? timer p?",
    "core.v1.domain.ClockOffset": "utc p? timezone p?",
    "core.v1.domain.ClockOffsetUTC": "offsetSeconds p?",
    "core.v1.domain.CustomBlockSize": "logical i physical i",
    "core.v1.domain.DHCPOptions": "bootFileName s? tftpServerName s? ntpServers l? privateOptions l?",
    "core.v1.domain.DHCPPrivateOptions": "option i value s",
    "core.v1.domain.DeprecatedInterfaceMacvtap": "",
    "core.v1.domain.DeprecatedInterfacePasst": "",
    "core.v1.domain.DeprecatedInterfaceSlirp": "",
    "core.v1.domain.Devices": (
        "useVirtioTransitional p? disableHotplug b? disks l? watchdog p? interfaces l? "
        "inputs l? autoattachPodInterface p? autoattachGraphicsDevice p? "
        "autoattachSerialConsole p? logSerialConsole p? autoattachMemBalloon p? "
        "autoattachInputDevice p? autoattachVSOCK p? rng p? blockMultiQueue p? "
        "networkInterfaceMultiqueue p? gpus l? downwardMetrics p? panicDevices l? "
        "filesystems l? hostDevices l? clientPassthrough p? sound p? tpm p? video p?"
    ),
    "core.v1.domain.Diag288Watchdog": "action s?",
    "core.v1.domain.Disk": (
        "name s disk p? lun p? cdrom p? bootOrder p? serial s? dedicatedIOThread p? cache s? "
        "io s? tag s? blockSize p? shareable p? errorPolicy p?"
    ),
    "core.v1.domain.DiskDevice": "disk p? lun p? cdrom p?",
    "core.v1.domain.DiskIOThreads": "supplementalPoolThreadCount p?",
    "core.v1.domain.DiskTarget": "bus s? readonly b? pciAddress s?",
    "core.v1.domain.DomainSpec": (
        "resources S? cpu p? memory p? machine p? firmware p? clock p? features p? devices S "
        "ioThreadsPolicy p? ioThreads p? chassis p? launchSecurity p?"
    ),
    "core.v1.domain.DownwardMetrics": "",
    "core.v1.domain.EFI": "secureBoot p? persistent p?",
    "core.v1.domain.FeatureAPIC": "enabled p? endOfInterrupt b?",
    "core.v1.domain.FeatureHyperv": (
        "relaxed p? vapic p? spinlocks p? vpindex p? runtime p? synic p? synictimer p? "
        "reset p? vendorid p? frequencies p? reenlightenment p? tlbflush p? ipi p? evmcs p?"
    ),
    "core.v1.domain.FeatureKVM": "hidden b?",
    "core.v1.domain.FeatureSpinlocks": "enabled p? spinlocks p?",
    "core.v1.domain.FeatureState": "enabled p?",
    "core.v1.domain.FeatureVendorID": "enabled p? vendorid s?",
    "core.v1.domain.Features": ("acpi S? apic p? hypervPassthrough p? hyperv p? smm p? kvm p? pvspinlock p?"),
    "core.v1.domain.Filesystem": "name s virtiofs p",
    "core.v1.domain.FilesystemVirtiofs": "",
    "core.v1.domain.Firmware": "uuid s? bootloader p? serial s? kernelBoot p? acpi p?",
    "core.v1.domain.GPU": "name s deviceName s? claimName p? requestName p? virtualGPUOptions p? tag s?",
    "core.v1.domain.HPETTimer": "tickPolicy s? present p?",
    "core.v1.domain.HostDevice": "name s deviceName s? claimName p? requestName p? tag s?",
    "core.v1.domain.Hugepages": "pageSize s?",
    "core.v1.domain.HyperVPassthrough": "enabled p?",
    "core.v1.domain.HypervTimer": "present p?",
    "core.v1.domain.I6300ESBWatchdog": "action s?",
    "core.v1.domain.Input": "bus s? type s name s",
    "core.v1.domain.Interface": (
        "name s model s? bridge p? slirp p? masquerade p? sriov p? macvtap p? passt p? "
        "binding p? ports l? macAddress s? bootOrder p? pciAddress s? dhcpOptions p? tag s? "
        "acpiIndex i? state s?"
    ),
    "core.v1.domain.InterfaceBindingMethod": (
        "bridge p? slirp p? masquerade p? sriov p? macvtap p? passt p?"
    ),
    "core.v1.domain.InterfaceBridge": "",
    "core.v1.domain.InterfaceMasquerade": "",
    "core.v1.domain.InterfaceSRIOV": "",
    "core.v1.domain.KVMTimer": "present p?",
    "core.v1.domain.KernelBoot": "kernelArgs s? container p?",
    "core.v1.domain.KernelBootContainer": (
        "image s imagePullSecret s? imagePullPolicy s? kernelPath s? initrdPath s?"
    ),
    "core.v1.domain.LaunchSecurity": "sev p?",
    "core.v1.domain.LunTarget": "bus s? readonly b? reservation b?",
    "core.v1.domain.Machine": "type s",
    "core.v1.domain.Memory": "hugepages p? guest p? maxGuest p?",
    "core.v1.domain.NUMA": "guestMappingPassthrough p?",
    "core.v1.domain.NUMAGuestMappingPassthrough": "",
    "core.v1.domain.PITTimer": "tickPolicy s? present p?",
    "core.v1.domain.PanicDevice": "model p?",
    "core.v1.domain.PluginBinding": "name s",
    "core.v1.domain.Port": "name s? protocol s? port i",
    "core.v1.domain.RTCTimer": "tickPolicy s? present p? track s?",
    "core.v1.domain.Realtime": "mask s?",
    "core.v1.domain.ResourceRequirements": "requests m? limits m? overcommitGuestOverhead b?",
    "core.v1.domain.Rng": "",
    "core.v1.domain.SEV": "policy p? attestation p? session s? dhCert s?",
    "core.v1.domain.SEVAttestation": "",
    "core.v1.domain.SEVPolicy": "encryptedState p?",
    "core.v1.domain.SoundDevice": "name s model s?",
    "core.v1.domain.SyNICTimer": "enabled p? direct p?",
    "core.v1.domain.TPMDevice": "enabled p? persistent p?",
    "core.v1.domain.Timer": "hpet p? kvm p? pit p? rtc p? hyperv p?",
    "core.v1.domain.VGPUDisplayOptions": "enabled p? ramFB p?",
    "core.v1.domain.VGPUOptions": "display p?",
    "core.v1.domain.VideoDevice": "type s?",
    "core.v1.domain.Watchdog": "name s i6300esb p? diag288 p?",
    "core.v1.domain.WatchdogDevice": "i6300esb p? diag288 p?",
    "core.v1.kubevirt.ArchConfiguration": "amd64 p? arm64 p? ppc64le p? defaultArchitecture s?",
    "core.v1.kubevirt.ArchSpecificConfiguration": "ovmfPath s? emulatedMachines l? machineType s?",
    "core.v1.kubevirt.CertConfig": "duration p? renewBefore p?",
    "core.v1.kubevirt.CommonInstancetypesDeployment": "enabled p?",
    "core.v1.kubevirt.ComponentConfig": "nodePlacement p? replicas p?",
    "core.v1.kubevirt.CustomProfile": "localhostProfile p? runtimeDefaultProfile b?",
    "core.v1.kubevirt.CustomizeComponents": "patches l? flags p?",
    "core.v1.kubevirt.CustomizeComponentsPatch": "resourceName s resourceType s patch s type s",
    "core.v1.kubevirt.DeveloperConfiguration": (
        "featureGates l? pvcTolerateLessSpaceUpToPercent i? minimumReservePVCBytes i? "
        "memoryOvercommit i? nodeSelectors m? useEmulation b? cpuAllocationRatio i? "
        "minimumClusterTSCFrequency p? diskVerification p? logVerbosity p? clusterProfiler b?"
    ),
    "core.v1.kubevirt.DisableFreePageReporting": "",
    "core.v1.kubevirt.DisableSerialConsoleLog": "",
    "core.v1.kubevirt.DiskVerification": "memoryLimit p",
    "core.v1.kubevirt.Flags": "api m? controller m? handler m?",
    "core.v1.kubevirt.GenerationStatus": ("group s resource s namespace s? name s lastGeneration i hash s?"),
    "core.v1.kubevirt.InstancetypeConfiguration": "referencePolicy p?",
    "core.v1.kubevirt.InterfaceBindingMigration": "method s?",
    "core.v1.kubevirt.InterfaceBindingPlugin": (
        "sidecarImage s? networkAttachmentDefinition s? domainAttachmentType s? migration p? "
        "downwardAPI s? computeResourceOverhead p?"
    ),
    "core.v1.kubevirt.KSMConfiguration": "nodeLabelSelector p?",
    "core.v1.kubevirt.KubeVirt": "kind s? apiVersion s? metadata S? spec S status S?",
    "core.v1.kubevirt.KubeVirtCertificateRotateStrategy": "selfSigned p?",
    "core.v1.kubevirt.KubeVirtCondition": (
        "type s status s lastProbeTime T? lastTransitionTime T? reason s? message s?"
    ),
    "core.v1.kubevirt.KubeVirtConfiguration": (
        "cpuModel s? cpuRequest p? developerConfiguration p? emulatedMachines l? "
        "imagePullPolicy s? migrations p? machineType s? network p? ovmfPath s? "
        "selinuxLauncherType s? defaultRuntimeClass s? smbios p? architectureConfiguration p? "
        "evictionStrategy p? additionalGuestMemoryOverheadRatio p? "
        "supportContainerResources l? supportedGuestAgentVersions l? memBalloonStatsPeriod p? "
        "permittedHostDevices p? mediatedDevicesConfiguration p? minCPUModel s? "
        "obsoleteCPUModels m? virtualMachineInstancesPerNode p? apiConfiguration p? "
        "webhookConfiguration p? controllerConfiguration p? handlerConfiguration p? "
        "tlsConfiguration p? seccompConfiguration p? vmStateStorageClass s? "
        "virtualMachineOptions p? ksmConfiguration p? autoCPULimitNamespaceLabelSelector p? "
        "liveUpdateConfiguration p? vmRolloutStrategy p? commonInstancetypesDeployment p? "
        "instancetype p?"
    ),
    "core.v1.kubevirt.KubeVirtList": "kind s? apiVersion s? metadata S? items l",
    "core.v1.kubevirt.KubeVirtSelfSignConfiguration": (
        "caRotateInterval p? certRotateInterval p? caOverlapInterval p? ca p? server p?"
    ),
    "core.v1.kubevirt.KubeVirtSpec": (
        "imageTag s? imageRegistry s? imagePullPolicy s? imagePullSecrets l? "
        "monitorNamespace s? serviceMonitorNamespace s? monitorAccount s? "
        "workloadUpdateStrategy S? uninstallStrategy s? certificateRotateStrategy S? "
        "productVersion s? productName s? productComponent s? synchronizationPort s? "
        "configuration S? infra p? workloads p? customizeComponents S?"
    ),
    "core.v1.kubevirt.KubeVirtStatus": (
        "phase s? conditions l? operatorVersion s? targetKubeVirtRegistry s? "
        "targetKubeVirtVersion s? targetDeploymentConfig s? targetDeploymentID s? "
        "observedKubeVirtRegistry s? observedKubeVirtVersion s? observedDeploymentConfig s? "
        "observedDeploymentID s? outdatedVirtualMachineInstanceWorkloads p? "
        "observedGeneration p? defaultArchitecture s? generations l? "
        "synchronizationAddresses l?"
    ),
    "core.v1.kubevirt.KubeVirtWorkloadUpdateStrategy": (
        "workloadUpdateMethods l? batchEvictionSize p? batchEvictionInterval p?"
    ),
    "core.v1.kubevirt.LiveUpdateConfiguration": "maxHotplugRatio i? maxCpuSockets p? maxGuest p?",
    "core.v1.kubevirt.LogVerbosity": (
        "virtAPI i? virtController i? virtHandler i? virtLauncher i? virtOperator i? "
        "virtSynchronizationController i? nodeVerbosity m?"
    ),
    "core.v1.kubevirt.MediatedDevicesConfiguration": (
        "mediatedDevicesTypes l? mediatedDeviceTypes l? nodeMediatedDeviceTypes l?"
    ),
    "core.v1.kubevirt.MediatedHostDevice": ("mdevNameSelector s resourceName s externalResourceProvider b?"),
    "core.v1.kubevirt.NetworkConfiguration": (
        "defaultNetworkInterface s? permitSlirpInterface p? permitBridgeInterfaceOnPodNetwork p? binding m?"
    ),
    "core.v1.kubevirt.NodeMediatedDeviceTypesConfig": (
        "nodeSelector m mediatedDevicesTypes l? mediatedDeviceTypes l"
    ),
    "core.v1.kubevirt.NodePlacement": "nodeSelector m? affinity p? tolerations l?",
    "core.v1.kubevirt.PciHostDevice": "pciVendorSelector s resourceName s externalResourceProvider b?",
    "core.v1.kubevirt.PermittedHostDevices": "pciHostDevices l? mediatedDevices l? usb l?",
    "core.v1.kubevirt.RESTClientConfiguration": "rateLimiter p?",
    "core.v1.kubevirt.RateLimiter": "tokenBucketRateLimiter p?",
    "core.v1.kubevirt.ReloadableComponentConfiguration": "restClient p?",
    "core.v1.kubevirt.ResourceRequirementsWithoutClaims": "limits m? requests m?",
    "core.v1.kubevirt.SMBiosConfiguration": "manufacturer s? product s? version s? sku s? family s?",
    "core.v1.kubevirt.SeccompConfiguration": "virtualMachineInstanceProfile p?",
    "core.v1.kubevirt.SupportContainerResources": "type s resources S",
    "core.v1.kubevirt.TLSConfiguration": "minTLSVersion s? ciphers l?",
    "core.v1.kubevirt.TokenBucketRateLimiter": "qps f burst i",
    "core.v1.kubevirt.USBHostDevice": "resourceName s selectors l? externalResourceProvider b?",
    "core.v1.kubevirt.USBSelector": "vendor s product s",
    "core.v1.kubevirt.VirtualMachineInstanceProfile": "customProfile p?",
    "core.v1.kubevirt.VirtualMachineOptions": "disableFreePageReporting p? disableSerialConsoleLog p?",
    "core.v1.migration.VirtualMachineInstanceMigration": (
        "kind s? apiVersion s? metadata S? spec S status S?"
    ),
    "core.v1.migration.VirtualMachineInstanceMigrationCondition": (
        "type s status s lastProbeTime T? lastTransitionTime T? reason s? message s?"
    ),
    "core.v1.migration.VirtualMachineInstanceMigrationList": "kind s? apiVersion s? metadata S? items l",
    "core.v1.migration.VirtualMachineInstanceMigrationPhaseTransitionTimestamp": (
        "phase s? phaseTransitionTimestamp T?"
    ),
    "core.v1.migration.VirtualMachineInstanceMigrationSource": "migrationID s connectURL s",
    "core.v1.migration.VirtualMachineInstanceMigrationSpec": (
        "vmiName s? addedNodeSelector m? sendTo p? receive p?"
    ),
    "core.v1.migration.VirtualMachineInstanceMigrationStatus": (
        "phase s? conditions l? phaseTransitionTimestamps l? migrationState p? synchronizationAddresses l?"
    ),
    "core.v1.migration.VirtualMachineInstanceMigrationTarget": "migrationID s",
    "core.v1.networks.MultusNetwork": "networkName s default b?",
    "core.v1.networks.Network": "name s pod p? multus p?",
    "core.v1.networks.NetworkSource": "pod p? multus p?",
    "core.v1.networks.PodNetwork": "vmNetworkCIDR s? vmIPv6NetworkCIDR s?",
    "core.v1.preset.VirtualMachineInstancePreset": "kind s? apiVersion s? metadata S? spec S?",
    "core.v1.preset.VirtualMachineInstancePresetList": "kind s? apiVersion s? metadata S? items l",
    "core.v1.preset.VirtualMachineInstancePresetSpec": "selector S domain p?",
    "core.v1.probes.GuestAgentPing": "",
    "core.v1.probes.Handler": "exec p? guestAgentPing p? httpGet p? tcpSocket p?",
    "core.v1.probes.Probe": (
        "exec p? guestAgentPing p? httpGet p? tcpSocket p? initialDelaySeconds i? "
        "timeoutSeconds i? periodSeconds i? successThreshold i? failureThreshold i?"
    ),
    "core.v1.replicaset.VirtualMachineInstanceReplicaSet": (
        "kind s? apiVersion s? metadata S? spec S status S?"
    ),
    "core.v1.replicaset.VirtualMachineInstanceReplicaSetCondition": (
        "type s status s lastProbeTime T? lastTransitionTime T? reason s? message s?"
    ),
    "core.v1.replicaset.VirtualMachineInstanceReplicaSetList": ("kind s? apiVersion s? metadata S? items l"),
    "core.v1.replicaset.VirtualMachineInstanceReplicaSetSpec": (
        "replicas p? selector p template p paused b?"
    ),
    "core.v1.replicaset.VirtualMachineInstanceReplicaSetStatus": (
        "replicas i? readyReplicas i? conditions l? labelSelector s?"
    ),
    "core.v1.subresources.FreezeUnfreezeTimeout": "unfreezeTimeout p",
    "core.v1.subresources.GuestAgentCommandInfo": "name s enabled b?",
    "core.v1.subresources.MigrateOptions": "kind s? apiVersion s? dryRun l? addedNodeSelector m?",
    "core.v1.subresources.ObjectGraphNode": (
        "kind s? apiVersion s? objectReference S labels m? optional p? children l?"
    ),
    "core.v1.subresources.ObjectGraphOptions": "includeOptionalNodes p? labelSelector p?",
    "core.v1.subresources.PauseOptions": "kind s? apiVersion s? dryRun l?",
    "core.v1.subresources.RestartOptions": "kind s? apiVersion s? gracePeriodSeconds p? dryRun l?",
    "core.v1.subresources.SEVMeasurementInfo": (
        "kind s? apiVersion s? measurement s? apiMajor i? apiMinor i? buildID i? policy i? loaderSHA s?"
    ),
    "core.v1.subresources.SEVPlatformInfo": "kind s? apiVersion s? pdh s? certChain s?",
    "core.v1.subresources.SEVSecretOptions": "header s? secret s?",
    "core.v1.subresources.SEVSessionOptions": "session s? dhCert s?",
    "core.v1.subresources.ScreenshotOptions": "moveCursor b",
    "core.v1.subresources.StartOptions": "kind s? apiVersion s? paused b? dryRun l?",
    "core.v1.subresources.StopOptions": "kind s? apiVersion s? gracePeriod p? dryRun l?",
    "core.v1.subresources.UnpauseOptions": "kind s? apiVersion s? dryRun l?",
    "core.v1.subresources.VSOCKOptions": "targetPort i useTLS p?",
    "core.v1.subresources.VirtualMachineInstanceFileSystem": (
        "diskName s mountPoint s fileSystemType s usedBytes i totalBytes i disk l?"
    ),
    "core.v1.subresources.VirtualMachineInstanceFileSystemDisk": "serial s? busType s",
    "core.v1.subresources.VirtualMachineInstanceFileSystemInfo": "disks l",
    "core.v1.subresources.VirtualMachineInstanceFileSystemList": (
        "kind s? apiVersion s? metadata S? items l"
    ),
    "core.v1.subresources.VirtualMachineInstanceGuestAgentInfo": (
        "kind s? apiVersion s? guestAgentVersion s? supportedCommands l? hostname s? os S? "
        "timezone s? userList l? fsInfo S? fsFreezeStatus s?"
    ),
    "core.v1.subresources.VirtualMachineInstanceGuestOSUser": "userName s domain s? loginTime f?",
    "core.v1.subresources.VirtualMachineInstanceGuestOSUserList": (
        "kind s? apiVersion s? metadata S? items l"
    ),
    "core.v1.vm.AddVolumeOptions": "name s disk p volumeSource p dryRun l?",
    "core.v1.vm.ControllerRevisionRef": "name s?",
    "core.v1.vm.DataVolumeTemplateDummyStatus": "",
    "core.v1.vm.DataVolumeTemplateSpec": "kind s? apiVersion s? metadata S? spec S status p?",
    "core.v1.vm.InstancetypeMatcher": (
        "name s? kind s? revisionName s? inferFromVolume s? inferFromVolumeFailurePolicy p?"
    ),
    "core.v1.vm.InstancetypeStatusRef": (
        "name s? kind s? controllerRevisionRef p? inferFromVolume s? inferFromVolumeFailurePolicy p?"
    ),
    "core.v1.vm.PreferenceMatcher": (
        "name s? kind s? revisionName s? inferFromVolume s? inferFromVolumeFailurePolicy p?"
    ),
    "core.v1.vm.RemoveVolumeOptions": "name s dryRun l?",
    "core.v1.vm.VirtualMachine": "kind s? apiVersion s? metadata S? spec S status S?",
    "core.v1.vm.VirtualMachineCondition": (
        "type s status s lastProbeTime T? lastTransitionTime T? reason s? message s?"
    ),
    "core.v1.vm.VirtualMachineList": "kind s? apiVersion s? metadata S? items l",
    "core.v1.vm.VirtualMachineMemoryDumpRequest": (
        "claimName s phase s remove b? startTimestamp p? endTimestamp p? fileName p? message s?"
    ),
    "core.v1.vm.VirtualMachineSpec": (
        "running p? runStrategy p? instancetype p? preference p? template p "
        "dataVolumeTemplates l? updateVolumesStrategy p?"
    ),
    "core.v1.vm.VirtualMachineStartFailure": (
        "consecutiveFailCount i? lastFailedVMIUID s? retryAfterTimestamp p?"
    ),
    "core.v1.vm.VirtualMachineStateChangeRequest": "action s data m? uid p?",
    "core.v1.vm.VirtualMachineStatus": (
        "snapshotInProgress p? restoreInProgress p? created b? ready b? printableStatus s? "
        "conditions l? stateChangeRequests l? volumeRequests l? volumeSnapshotStatuses l? "
        "startFailure p? memoryDumpRequest p? observedGeneration i? desiredGeneration i? "
        "runStrategy s? volumeUpdateState p? instancetypeRef p? preferenceRef p?"
    ),
    "core.v1.vm.VirtualMachineVolumeRequest": "addVolumeOptions p? removeVolumeOptions p?",
    "core.v1.vm.VolumeMigrationState": "migratedVolumes l?",
    "core.v1.vm.VolumeSnapshotStatus": "name s enabled b reason s?",
    "core.v1.vm.VolumeUpdateState": "volumeMigrationState p?",
    "core.v1.vmi.AccessCredential": "sshPublicKey p? userPassword p?",
    "core.v1.vmi.AccessCredentialSecretSource": "secretName s",
    "core.v1.vmi.CPUTopology": "cores i? sockets i? threads i?",
    "core.v1.vmi.ConfigDriveSSHPublicKeyAccessCredentialPropagation": "",
    "core.v1.vmi.DeviceAttribute": "pciAddress p? mDevUUID p?",
    "core.v1.vmi.DeviceResourceClaimStatus": "name p? resourceClaimName p? attributes p?",
    "core.v1.vmi.DeviceStatus": "gpuStatuses l? hostDeviceStatuses l?",
    "core.v1.vmi.DeviceStatusInfo": "name s deviceResourceClaimStatus p?",
    "core.v1.vmi.InitrdInfo": "checksum i?",
    "core.v1.vmi.KernelBootStatus": "kernelInfo p? initrdInfo p?",
    "core.v1.vmi.KernelInfo": "checksum i?",
    "core.v1.vmi.MemoryStatus": "guestAtBoot p? guestCurrent p? guestRequested p?",
    "core.v1.vmi.MigrationConfiguration": (
        "nodeDrainTaintKey p? parallelOutboundMigrationsPerNode p? "
        "parallelMigrationsPerCluster p? allowAutoConverge p? bandwidthPerMigration p? "
        "completionTimeoutPerGiB p? progressTimeout p? unsafeMigrationOverride p? "
        "allowPostCopy p? allowWorkloadDisruption p? disableTLS p? network p? "
        "matchSELinuxLevelOnMigration p?"
    ),
    "core.v1.vmi.NoCloudSSHPublicKeyAccessCredentialPropagation": "",
    "core.v1.vmi.QemuGuestAgentSSHPublicKeyAccessCredentialPropagation": "users l",
    "core.v1.vmi.QemuGuestAgentUserPasswordAccessCredentialPropagation": "",
    "core.v1.vmi.SSHPublicKeyAccessCredential": "source S propagationMethod S",
    "core.v1.vmi.SSHPublicKeyAccessCredentialPropagationMethod": (
        "configDrive p? noCloud p? qemuGuestAgent p?"
    ),
    "core.v1.vmi.SSHPublicKeyAccessCredentialSource": "secret p?",
    "core.v1.vmi.StorageMigratedVolumeInfo": "volumeName s sourcePVCInfo p? destinationPVCInfo p?",
    "core.v1.vmi.TopologyHints": "tscFrequency p?",
    "core.v1.vmi.UserPasswordAccessCredential": "source S propagationMethod S",
    "core.v1.vmi.UserPasswordAccessCredentialPropagationMethod": "qemuGuestAgent p?",
    "core.v1.vmi.UserPasswordAccessCredentialSource": "secret p?",
    "core.v1.vmi.VirtualMachineInstance": "kind s? apiVersion s? metadata S? spec S status S?",
    "core.v1.vmi.VirtualMachineInstanceCommonMigrationState": (
        "node s? pod s? migrationUID s? domainName p? domainNamespace p? syncAddress p? "
        "persistentStatePVCName p? selinuxContext s? virtualMachineInstanceUID p?"
    ),
    "core.v1.vmi.VirtualMachineInstanceCondition": (
        "type s status s lastProbeTime T? lastTransitionTime T? reason s? message s?"
    ),
    "core.v1.vmi.VirtualMachineInstanceGuestOSInfo": (
        "name s? kernelRelease s? version s? prettyName s? versionId s? kernelVersion s? machine s? id s?"
    ),
    "core.v1.vmi.VirtualMachineInstanceList": "kind s? apiVersion s? metadata S? items l",
    "core.v1.vmi.VirtualMachineInstanceMigrationSourceState": (
        "node s? pod s? migrationUID s? domainName p? domainNamespace p? syncAddress p? "
        "persistentStatePVCName p? selinuxContext s? virtualMachineInstanceUID p? "
        "nodeSelectors m?"
    ),
    "core.v1.vmi.VirtualMachineInstanceMigrationState": (
        "startTimestamp p? endTimestamp p? targetNodeDomainReadyTimestamp p? "
        "targetNodeDomainDetected b? targetNodeAddress s? targetDirectMigrationNodePorts m? "
        "targetNode s? targetPod s? targetAttachmentPodUID s? sourceNode s? sourcePod s? "
        "completed b? failed b? abortRequested b? abortStatus s? failureReason s? "
        "migrationUid s? mode s? migrationPolicyName p? migrationConfiguration p? "
        "targetCPUSet l? targetNodeTopology s? sourcePersistentStatePVCName s? "
        "targetPersistentStatePVCName s? sourceState p? targetState p? "
        "migrationNetworkType s?"
    ),
    "core.v1.vmi.VirtualMachineInstanceMigrationTargetState": (
        "node s? pod s? migrationUID s? domainName p? domainNamespace p? syncAddress p? "
        "persistentStatePVCName p? selinuxContext s? virtualMachineInstanceUID p? "
        "domainReadyTimestamp p? domainDetected b? nodeAddress p? directMigrationNodePorts m? "
        "attachmentPodUID p? cpuSet l? nodeTopology p?"
    ),
    "core.v1.vmi.VirtualMachineInstanceNetworkInterface": (
        "ipAddress s? mac s? name s? ipAddresses l? podInterfaceName s? interfaceName s? "
        "infoSource s? queueCount i? linkState s?"
    ),
    "core.v1.vmi.VirtualMachineInstancePhaseTransitionTimestamp": "phase s? phaseTransitionTimestamp T?",
    "core.v1.vmi.VirtualMachineInstanceSpec": (
        "priorityClassName s? domain S nodeSelector m? affinity p? schedulerName s? "
        "tolerations l? topologySpreadConstraints l? evictionStrategy p? startStrategy p? "
        "terminationGracePeriodSeconds p? volumes l? livenessProbe p? readinessProbe p? "
        "hostname s? subdomain s? networks l? dnsPolicy s? dnsConfig p? accessCredentials l? "
        "architecture s? resourceClaims l?"
    ),
    "core.v1.vmi.VirtualMachineInstanceStatus": (
        "nodeName s? reason s? conditions l? phase s? phaseTransitionTimestamps l? "
        "interfaces l? guestOSInfo S? migrationState p? migrationMethod s? "
        "migrationTransport s? qosClass p? launcherContainerImageVersion s? "
        "evacuationNodeName s? activePods m? volumeStatus l? kernelBootStatus p? "
        "fsFreezeStatus s? topologyHints p? virtualMachineRevisionName s? runtimeUser i "
        "VSOCKCID p? selinuxContext s? machine p? currentCPUTopology p? memory p? "
        "migratedVolumes l? deviceStatus p?"
    ),
    "core.v1.vmi.VirtualMachineInstanceTemplateSpec": "metadata S? spec S?",
    "core.v1.volumes.CloudInitConfigDriveSource": (
        "secretRef p? userDataBase64 s? userData s? networkDataSecretRef p? "
        "networkDataBase64 s? networkData s?"
    ),
    "core.v1.volumes.CloudInitNoCloudSource": (
        "secretRef p? userDataBase64 s? userData s? networkDataSecretRef p? "
        "networkDataBase64 s? networkData s?"
    ),
    "core.v1.volumes.ConfigMapVolumeSource": "name s? optional p? volumeLabel s?",
    "core.v1.volumes.ContainerDiskInfo": "checksum i?",
    "core.v1.volumes.ContainerDiskSource": "image s imagePullSecret s? path s? imagePullPolicy s?",
    "core.v1.volumes.DataVolumeSource": "name s hotpluggable b?",
    "core.v1.volumes.DomainMemoryDumpInfo": (
        "startTimestamp p? endTimestamp p? claimName s? targetFileName s?"
    ),
    "core.v1.volumes.DownwardAPIVolumeSource": "fields l? volumeLabel s?",
    "core.v1.volumes.DownwardMetricsVolumeSource": "",
    "core.v1.volumes.EmptyDiskSource": "capacity Q",
    "core.v1.volumes.EphemeralVolumeSource": "persistentVolumeClaim p?",
    "core.v1.volumes.HostDisk": "path s type s capacity Q? shared p?",
    "core.v1.volumes.HotplugVolumeSource": "persistentVolumeClaim p? dataVolume p?",
    "core.v1.volumes.HotplugVolumeStatus": "attachPodName s? attachPodUID s?",
    "core.v1.volumes.MemoryDumpVolumeSource": "claimName s readOnly b? hotpluggable b?",
    "core.v1.volumes.PersistentVolumeClaimInfo": (
        "claimName s? accessModes l? volumeMode p? capacity m? requests m? preallocated b? "
        "filesystemOverhead p?"
    ),
    "core.v1.volumes.PersistentVolumeClaimVolumeSource": "claimName s readOnly b? hotpluggable b?",
    "core.v1.volumes.SecretVolumeSource": "secretName s? optional p? volumeLabel s?",
    "core.v1.volumes.ServiceAccountVolumeSource": "serviceAccountName s?",
    "core.v1.volumes.SysprepSource": "secret p? configMap p?",
    "core.v1.volumes.Volume": (
        "name s hostDisk p? persistentVolumeClaim p? cloudInitNoCloud p? "
        "cloudInitConfigDrive p? sysprep p? containerDisk p? ephemeral p? emptyDisk p? "
        "dataVolume p? configMap p? secret p? downwardAPI p? serviceAccount p? "
        "downwardMetrics p? memoryDump p?"
    ),
    "core.v1.volumes.VolumeSource": (
        "hostDisk p? persistentVolumeClaim p? cloudInitNoCloud p? cloudInitConfigDrive p? "
        "sysprep p? containerDisk p? ephemeral p? emptyDisk p? dataVolume p? configMap p? "
        "secret p? downwardAPI p? serviceAccount p? downwardMetrics p? memoryDump p?"
    ),
    "core.v1.volumes.VolumeStatus": (
        "name s target s phase s? reason s? message s? persistentVolumeClaimInfo p? "
        "hotplugVolume p? size i? memoryDumpVolume p? containerDiskVolume p?"
    ),
    "instancetype.v1beta1.types.CPUInstancetype": (
        "guest i model p? dedicatedCPUPlacement p? numa p? isolateEmulatorThread p? realtime p? maxSockets p?"
    ),
    "instancetype.v1beta1.types.CPUPreferenceRequirement": "guest i",
    "instancetype.v1beta1.types.CPUPreferences": (
        "preferredCPUTopology p? spreadOptions p? preferredCPUFeatures l?"
    ),
    "instancetype.v1beta1.types.ClockPreferences": "preferredClockOffset p? preferredTimer p?",
    "instancetype.v1beta1.types.DevicePreferences": (
        "preferredAutoattachGraphicsDevice p? preferredAutoattachMemBalloon p? "
        "preferredAutoattachPodInterface p? preferredAutoattachSerialConsole p? "
        "preferredAutoattachInputDevice p? preferredDisableHotplug p? preferredVirtualGPUOptions p? "
        "preferredSoundModel s? preferredUseVirtioTransitional p? preferredInputBus s? "
        "preferredInputType s? preferredDiskBus s? preferredLunBus s? preferredCdromBus s? "
        "preferredDiskDedicatedIoThread p? preferredDiskCache s? preferredDiskIO s? "
        "preferredDiskBlockSize p? preferredInterfaceModel s? preferredRng p? "
        "preferredBlockMultiQueue p? preferredNetworkInterfaceMultiQueue p? preferredTPM p? "
        "preferredInterfaceMasquerade p? preferredPanicDeviceModel p?"
    ),
    "instancetype.v1beta1.types.FeaturePreferences": (
        "preferredAcpi p? preferredApic p? preferredHyperv p? preferredKvm p? "
        "preferredPvspinlock p? preferredSmm p?"
    ),
    "instancetype.v1beta1.types.FirmwarePreferences": (
        "preferredUseBios p? preferredUseBiosSerial p? preferredUseEfi p? preferredUseSecureBoot p? "
        "preferredEfi p?"
    ),
    "instancetype.v1beta1.types.MachinePreferences": "preferredMachineType s?",
    "instancetype.v1beta1.types.MemoryInstancetype": "guest Q hugepages p? overcommitPercent i? maxGuest p?",
    "instancetype.v1beta1.types.MemoryPreferenceRequirement": "guest Q",
    "instancetype.v1beta1.types.PreferenceRequirements": "cpu p? memory p?",
    "instancetype.v1beta1.types.SpreadOptions": "across p? ratio p?",
    "instancetype.v1beta1.types.VirtualMachineClusterInstancetype": (
        "kind s? apiVersion s? metadata S? spec S"
    ),
    "instancetype.v1beta1.types.VirtualMachineClusterInstancetypeList": (
        "kind s? apiVersion s? metadata S? items l"
    ),
    "instancetype.v1beta1.types.VirtualMachineClusterPreference": "kind s? apiVersion s? metadata S? spec S",
    "instancetype.v1beta1.types.VirtualMachineClusterPreferenceList": (
        "kind s? apiVersion s? metadata S? items l"
    ),
    "instancetype.v1beta1.types.VirtualMachineInstancetype": "kind s? apiVersion s? metadata S? spec S",
    "instancetype.v1beta1.types.VirtualMachineInstancetypeList": "kind s? apiVersion s? metadata S? items l",
    "instancetype.v1beta1.types.VirtualMachineInstancetypeSpec": (
        "nodeSelector m? schedulerName s? cpu S memory S gpus l? hostDevices l? ioThreadsPolicy p? "
        "launchSecurity p? annotations m?"
    ),
    "instancetype.v1beta1.types.VirtualMachinePreference": "kind s? apiVersion s? metadata S? spec S",
    "instancetype.v1beta1.types.VirtualMachinePreferenceList": "kind s? apiVersion s? metadata S? items l",
    "instancetype.v1beta1.types.VirtualMachinePreferenceSpec": (
        "clock p? cpu p? devices p? features p? firmware p? machine p? volumes p? "
        "preferredSubdomain p? preferredTerminationGracePeriodSeconds p? requirements p? "
        "annotations m? preferSpreadSocketToCoreRatio i?"
    ),
    "instancetype.v1beta1.types.VolumePreferences": "preferredStorageClassName s?",
    "k8s.core_v1.Affinity": "nodeAffinity p? podAffinity p? podAntiAffinity p?",
    "k8s.core_v1.DownwardAPIVolumeFile": "path s fieldRef p? resourceFieldRef p? mode p?",
    "k8s.core_v1.ExecAction": "command l?",
    "k8s.core_v1.HTTPGetAction": "path s? port I host s? scheme s? httpHeaders l?",
    "k8s.core_v1.HTTPHeader": "name s value s",
    "k8s.core_v1.LocalObjectReference": "name s?",
    "k8s.core_v1.NodeAffinity": (
        "requiredDuringSchedulingIgnoredDuringExecution p? preferredDuringSchedulingIgnoredDuringExecution l?"
    ),
    "k8s.core_v1.NodeSelector": "nodeSelectorTerms l",
    "k8s.core_v1.NodeSelectorRequirement": "key s operator s values l?",
    "k8s.core_v1.NodeSelectorTerm": "matchExpressions l? matchFields l?",
    "k8s.core_v1.ObjectFieldSelector": "apiVersion s? fieldPath s",
    "k8s.core_v1.PersistentVolumeClaimSpec": (
        "accessModes l? selector p? resources S? volumeName s? storageClassName p? "
        "volumeMode p? dataSource p? dataSourceRef p? volumeAttributesClassName p?"
    ),
    "k8s.core_v1.PersistentVolumeClaimVolumeSource": "claimName s readOnly b?",
    "k8s.core_v1.PodAffinity": (
        "requiredDuringSchedulingIgnoredDuringExecution l? preferredDuringSchedulingIgnoredDuringExecution l?"
    ),
    "k8s.core_v1.PodAffinityTerm": (
        "labelSelector p? namespaces l? topologyKey s namespaceSelector p? matchLabelKeys l? "
        "mismatchLabelKeys l?"
    ),
    "k8s.core_v1.PodAntiAffinity": (
        "requiredDuringSchedulingIgnoredDuringExecution l? preferredDuringSchedulingIgnoredDuringExecution l?"
    ),
    "k8s.core_v1.PodDNSConfig": "nameservers l? searches l? options l?",
    "k8s.core_v1.PodDNSConfigOption": "name s? value p?",
    "k8s.core_v1.PodResourceClaim": "name s resourceClaimName p? resourceClaimTemplateName p?",
    "k8s.core_v1.PreferredSchedulingTerm": "weight i preference S",
    "k8s.core_v1.ResourceClaim": "name s request s?",
    "k8s.core_v1.ResourceFieldSelector": "containerName s? resource s divisor Q?",
    "k8s.core_v1.ResourceRequirements": "limits m? requests m? claims l?",
    "k8s.core_v1.TCPSocketAction": "port I host s?",
    "k8s.core_v1.Toleration": "key s? operator s? value s? effect s? tolerationSeconds p?",
    "k8s.core_v1.TopologySpreadConstraint": (
        "maxSkew i topologyKey s whenUnsatisfiable s labelSelector p? minDomains p? "
        "nodeAffinityPolicy p? nodeTaintsPolicy p? matchLabelKeys l?"
    ),
    "k8s.core_v1.TypedLocalObjectReference": "apiGroup p kind s name s",
    "k8s.core_v1.TypedObjectReference": "apiGroup p kind s name s namespace p?",
    "k8s.core_v1.VolumeResourceRequirements": "limits m? requests m?",
    "k8s.core_v1.WeightedPodAffinityTerm": "weight i podAffinityTerm S",
    "k8s.meta_v1.LabelSelector": "matchLabels m? matchExpressions l?",
    "k8s.meta_v1.LabelSelectorRequirement": "key s operator s values l?",
    "k8s.meta_v1.ListMeta": "selfLink s? resourceVersion s? continue s? remainingItemCount p?",
    "k8s.meta_v1.ManagedFieldsEntry": (
        "manager s? operation s? apiVersion s? time p? fieldsType s? fieldsV1 p? subresource s?"
    ),
    "k8s.meta_v1.ObjectMeta": (
        "name s? generateName s? namespace s? selfLink s? uid s? resourceVersion s? "
        "generation i? creationTimestamp T? deletionTimestamp p? "
        "deletionGracePeriodSeconds p? labels m? annotations m? ownerReferences l? "
        "finalizers l? managedFields l?"
    ),
    "k8s.meta_v1.OwnerReference": "apiVersion s kind s name s uid s controller p? blockOwnerDeletion p?",
    "k8s.meta_v1.TypeMeta": "kind s? apiVersion s?",
    "pool.v1alpha1.types.VirtualMachinePool": "kind s? apiVersion s? metadata S? spec S status S?",
    "pool.v1alpha1.types.VirtualMachinePoolCondition": (
        "type s status s lastProbeTime T? lastTransitionTime T? reason s? message s?"
    ),
    "pool.v1alpha1.types.VirtualMachinePoolList": "kind s? apiVersion s? metadata S? items l",
    "pool.v1alpha1.types.VirtualMachinePoolNameGeneration": (
        "appendIndexToConfigMapRefs p? appendIndexToSecretRefs p?"
    ),
    "pool.v1alpha1.types.VirtualMachinePoolProactiveScaleInStrategy": "selectionPolicy p?",
    "pool.v1alpha1.types.VirtualMachinePoolScaleInStrategy": "proactive p?",
    "pool.v1alpha1.types.VirtualMachinePoolSelectionPolicy": "basePolicy p?",
    "pool.v1alpha1.types.VirtualMachinePoolSpec": (
        "replicas p? selector p virtualMachineTemplate p paused b? nameGeneration p? "
        "maxUnavailable p? scaleInStrategy p?"
    ),
    "pool.v1alpha1.types.VirtualMachinePoolStatus": (
        "replicas i? readyReplicas i? conditions l? labelSelector s?"
    ),
    "pool.v1alpha1.types.VirtualMachineTemplateSpec": "metadata S? spec S?",
    "clone.v1beta1.types.CloneCondition": (
        "type s status s lastProbeTime T? lastTransitionTime T? reason s? message s?"
    ),
    "clone.v1beta1.types.VirtualMachineClone": "kind s? apiVersion s? metadata S? spec S status S?",
    "clone.v1beta1.types.VirtualMachineCloneList": "kind s? apiVersion s? metadata S? items l",
    "clone.v1beta1.types.VirtualMachineCloneSpec": (
        "source p target p? annotationFilters l? labelFilters l? template S? newMacAddresses m? "
        "newSMBiosSerial p? patches l?"
    ),
    "clone.v1beta1.types.VirtualMachineCloneStatus": (
        "creationTime p? phase s? conditions l? snapshotName p? restoreName p? targetName p?"
    ),
    "clone.v1beta1.types.VirtualMachineCloneTemplateFilters": "annotationFilters l? labelFilters l?",
    "export.v1beta1.types.ExportCondition": (
        "type s status s lastProbeTime T? lastTransitionTime T? reason s? message s?"
    ),
    "export.v1beta1.types.VirtualMachineExport": "kind s? apiVersion s? metadata S? spec S status p?",
    "export.v1beta1.types.VirtualMachineExportLink": "cert s volumes l? manifests l?",
    "export.v1beta1.types.VirtualMachineExportLinks": "internal p? external p?",
    "export.v1beta1.types.VirtualMachineExportList": "kind s? apiVersion s? metadata S items l",
    "export.v1beta1.types.VirtualMachineExportManifest": "type s url s",
    "export.v1beta1.types.VirtualMachineExportSpec": "source S tokenSecretRef p? ttlDuration p?",
    "export.v1beta1.types.VirtualMachineExportStatus": (
        "phase s? links p? tokenSecretRef p? ttlExpirationTime p? serviceName s? virtualMachineName "
        "p? conditions l?"
    ),
    "export.v1beta1.types.VirtualMachineExportVolume": "name s formats l?",
    "export.v1beta1.types.VirtualMachineExportVolumeFormat": "format s url s",
    "migrations.v1alpha1.types.MigrationPolicy": "kind s? apiVersion s? metadata S? spec S status S?",
    "migrations.v1alpha1.types.MigrationPolicyList": "kind s? apiVersion s? metadata S? items l",
    "migrations.v1alpha1.types.MigrationPolicySpec": (
        "selectors p allowAutoConverge p? bandwidthPerMigration p? completionTimeoutPerGiB p? "
        "allowPostCopy p? allowWorkloadDisruption p?"
    ),
    "migrations.v1alpha1.types.MigrationPolicyStatus": "",
    "migrations.v1alpha1.types.Selectors": "namespaceSelector m? virtualMachineInstanceSelector m?",
    "snapshot.v1beta1.types.Error": "time p? message p?",
    "snapshot.v1beta1.types.PersistentVolumeClaim": "metadata S? spec S?",
    "snapshot.v1beta1.types.SnapshotCondition": (
        "type s status s lastProbeTime T? lastTransitionTime T? reason s? message s?"
    ),
    "snapshot.v1beta1.types.SnapshotVolumesLists": "includedVolumes l? excludedVolumes l?",
    "snapshot.v1beta1.types.SourceSpec": "virtualMachine p?",
    "snapshot.v1beta1.types.VirtualMachine": "metadata S? spec S? status S?",
    "snapshot.v1beta1.types.VirtualMachineRestore": "kind s? apiVersion s? metadata S? spec S status p?",
    "snapshot.v1beta1.types.VirtualMachineRestoreList": "kind s? apiVersion s? metadata S items l",
    "snapshot.v1beta1.types.VirtualMachineRestoreSpec": (
        "target S virtualMachineSnapshotName s targetReadinessPolicy p? volumeRestorePolicy p? "
        "volumeRestoreOverrides l? patches l?"
    ),
    "snapshot.v1beta1.types.VirtualMachineRestoreStatus": (
        "restores l? restoreTime p? deletedDataVolumes l? complete p? conditions l?"
    ),
    "snapshot.v1beta1.types.VirtualMachineSnapshot": "kind s? apiVersion s? metadata S? spec S status p?",
    "snapshot.v1beta1.types.VirtualMachineSnapshotContent": (
        "kind s? apiVersion s? metadata S? spec S status p?"
    ),
    "snapshot.v1beta1.types.VirtualMachineSnapshotContentList": "kind s? apiVersion s? metadata S items l",
    "snapshot.v1beta1.types.VirtualMachineSnapshotContentSpec": (
        "virtualMachineSnapshotName p? source S volumeBackups l?"
    ),
    "snapshot.v1beta1.types.VirtualMachineSnapshotContentStatus": (
        "creationTime p? readyToUse p? error p? volumeSnapshotStatus l?"
    ),
    "snapshot.v1beta1.types.VirtualMachineSnapshotList": "kind s? apiVersion s? metadata S items l",
    "snapshot.v1beta1.types.VirtualMachineSnapshotSpec": "source S deletionPolicy p? failureDeadline p?",
    "snapshot.v1beta1.types.VirtualMachineSnapshotStatus": (
        "sourceUID p? virtualMachineSnapshotContentName p? creationTime p? phase s? readyToUse p? "
        "error p? conditions l? indications l? snapshotVolumes p?"
    ),
    "snapshot.v1beta1.types.VolumeBackup": "volumeName s persistentVolumeClaim S volumeSnapshotName p?",
    "snapshot.v1beta1.types.VolumeRestore": (
        "volumeName s persistentVolumeClaim s volumeSnapshotName s dataVolumeName p?"
    ),
    "snapshot.v1beta1.types.VolumeRestoreOverride": "volumeName s? restoreName s? labels m? annotations m?",
    "snapshot.v1beta1.types.VolumeSnapshotStatus": (
        "volumeSnapshotName s creationTime p? readyToUse p? error p?"
    ),
}
