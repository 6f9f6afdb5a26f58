"""Request and response bodies of the ``subresources.kubevirt.io`` API."""

from __future__ import annotations

from pydantic import Field

from kubevirt_api.base import ApiModel, Float, Int, Int64, TypeMeta, Uint, Uint32
from kubevirt_api.core.v1.vmi import VirtualMachineInstanceGuestOSInfo
from kubevirt_api.k8s import core_v1, meta_v1

__all__ = [
    "FreezeUnfreezeTimeout",
    "GuestAgentCommandInfo",
    "MigrateOptions",
    "ObjectGraphNode",
    "ObjectGraphOptions",
    "PauseOptions",
    "RestartOptions",
    "SEVMeasurementInfo",
    "SEVPlatformInfo",
    "SEVSecretOptions",
    "SEVSessionOptions",
    "ScreenshotOptions",
    "StartOptions",
    "StopOptions",
    "UnpauseOptions",
    "VSOCKOptions",
    "VirtualMachineInstanceFileSystem",
    "VirtualMachineInstanceFileSystemDisk",
    "VirtualMachineInstanceFileSystemInfo",
    "VirtualMachineInstanceFileSystemList",
    "VirtualMachineInstanceGuestAgentInfo",
    "VirtualMachineInstanceGuestOSUser",
    "VirtualMachineInstanceGuestOSUserList",
]


class StartOptions(TypeMeta):
    paused: bool | None = None
    dry_run: list[str] | None = Field(
        default=None, alias="dryRun", json_schema_extra={"x-kubernetes-list-type": "atomic"}
    )


class StopOptions(TypeMeta):
    grace_period: Int64 | None = Field(default=None, alias="gracePeriod")
    dry_run: list[str] | None = Field(
        default=None, alias="dryRun", json_schema_extra={"x-kubernetes-list-type": "atomic"}
    )


class RestartOptions(TypeMeta):
    grace_period_seconds: Int64 | None = Field(default=None, alias="gracePeriodSeconds")
    dry_run: list[str] | None = Field(
        default=None, alias="dryRun", json_schema_extra={"x-kubernetes-list-type": "atomic"}
    )


class MigrateOptions(TypeMeta):
    dry_run: list[str] | None = Field(
        default=None, alias="dryRun", json_schema_extra={"x-kubernetes-list-type": "atomic"}
    )
    added_node_selector: dict[str, str] | None = Field(default=None, alias="addedNodeSelector")


class PauseOptions(TypeMeta):
    dry_run: list[str] | None = Field(
        default=None, alias="dryRun", json_schema_extra={"x-kubernetes-list-type": "atomic"}
    )


class UnpauseOptions(TypeMeta):
    dry_run: list[str] | None = Field(
        default=None, alias="dryRun", json_schema_extra={"x-kubernetes-list-type": "atomic"}
    )


class FreezeUnfreezeTimeout(ApiModel):
    unfreeze_timeout: str = Field(alias="unfreezeTimeout")


class GuestAgentCommandInfo(ApiModel):
    name: str
    enabled: bool | None = None


class VirtualMachineInstanceGuestOSUser(ApiModel):
    user_name: str = Field(alias="userName")
    domain: str | None = None
    login_time: Float | None = Field(default=None, alias="loginTime")


class VirtualMachineInstanceFileSystemDisk(ApiModel):
    serial: str | None = None
    bus_type: str = Field(alias="busType")


class VirtualMachineInstanceFileSystem(ApiModel):
    disk_name: str = Field(alias="diskName")
    mount_point: str = Field(alias="mountPoint")
    file_system_type: str = Field(alias="fileSystemType")
    used_bytes: Int = Field(alias="usedBytes")
    total_bytes: Int = Field(alias="totalBytes")
    disk: list[VirtualMachineInstanceFileSystemDisk] | None = None


class VirtualMachineInstanceFileSystemInfo(ApiModel):
    disks: list[VirtualMachineInstanceFileSystem]


class VirtualMachineInstanceGuestAgentInfo(TypeMeta):
    guest_agent_version: str | None = Field(default=None, alias="guestAgentVersion")
    supported_commands: list[GuestAgentCommandInfo] | None = Field(
        default=None, alias="supportedCommands", json_schema_extra={"x-kubernetes-list-type": "atomic"}
    )
    hostname: str | None = None
    os: VirtualMachineInstanceGuestOSInfo | None = None
    timezone: str | None = None
    user_list: list[VirtualMachineInstanceGuestOSUser] | None = Field(default=None, alias="userList")
    fs_info: VirtualMachineInstanceFileSystemInfo | None = Field(default=None, alias="fsInfo")
    fs_freeze_status: str | None = Field(default=None, alias="fsFreezeStatus")


class VirtualMachineInstanceFileSystemList(TypeMeta):
    metadata: meta_v1.ListMeta | None = None
    items: list[VirtualMachineInstanceFileSystem]


class VirtualMachineInstanceGuestOSUserList(TypeMeta):
    metadata: meta_v1.ListMeta | None = None
    items: list[VirtualMachineInstanceGuestOSUser]


class ScreenshotOptions(ApiModel):
    move_cursor: bool = Field(alias="moveCursor")


class VSOCKOptions(ApiModel):
    target_port: Uint32 = Field(alias="targetPort")
    use_tls: bool | None = Field(default=None, alias="useTLS")


class SEVPlatformInfo(TypeMeta):
    pdh: str | None = None
    cert_chain: str | None = Field(default=None, alias="certChain")


class SEVMeasurementInfo(TypeMeta):
    measurement: str | None = None
    api_major: Uint | None = Field(default=None, alias="apiMajor")
    api_minor: Uint | None = Field(default=None, alias="apiMinor")
    build_id: Uint | None = Field(default=None, alias="buildID")
    policy: Uint | None = None
    loader_sha: str | None = Field(default=None, alias="loaderSHA")


class SEVSecretOptions(ApiModel):
    header: str | None = None
    secret: str | None = None


class SEVSessionOptions(ApiModel):
    session: str | None = None
    dh_cert: str | None = Field(default=None, alias="dhCert")


class ObjectGraphOptions(ApiModel):
    include_optional_nodes: bool | None = Field(default=None, alias="includeOptionalNodes")
    label_selector: meta_v1.LabelSelector | None = Field(default=None, alias="labelSelector")


class ObjectGraphNode(TypeMeta):
    object_reference: core_v1.TypedObjectReference = Field(alias="objectReference")
    labels: dict[str, str] | None = None
    optional: bool | None = None
    children: list[ObjectGraphNode] | None = Field(
        default=None, json_schema_extra={"x-kubernetes-list-type": "atomic"}
    )
