"""KubeVirt's own metadata in the domain (``<metadata><kubevirt xmlns="http://kubevirt.io">``): the VMI UID,
the grace period, migration outcome, access credentials and memory dumps."""

from __future__ import annotations

from .xmlmodel import KUBEVIRT_NS, XMLElement, child, element, text_child


@element("graceperiod", namespace=KUBEVIRT_NS)
class GracePeriodMetadata(XMLElement):
    deletion_grace_period_seconds: int | None = text_child("deletionGracePeriodSeconds", as_type=int)
    deletion_timestamp: str | None = text_child("deletionTimestamp", go_time=True)
    marked_for_graceful_shutdown: bool | None = text_child(
        "markedForGracefulShutdown", as_type=bool, go_pointer=True
    )


@element("migration", namespace=KUBEVIRT_NS)
class MigrationMetadata(XMLElement):
    uid: str | None = text_child(go="UID")
    start_timestamp: str | None = text_child("startTimestamp", go_time=True)
    end_timestamp: str | None = text_child("endTimestamp", go_time=True)
    # Older KubeVirt releases carry ``completed`` (a JSON key newer virt-handlers ignore).
    completed: bool | None = text_child(as_type=bool)
    failed: bool | None = text_child(as_type=bool)
    failure_reason: str | None = text_child("failureReason")
    abort_status: str | None = text_child("abortStatus")
    mode: str | None = text_child()


@element("accessCredential", namespace=KUBEVIRT_NS)
class AccessCredentialMetadata(XMLElement):
    succeeded: bool | None = text_child(as_type=bool)
    message: str | None = text_child()


@element("memoryDump", namespace=KUBEVIRT_NS)
class MemoryDumpMetadata(XMLElement):
    file_name: str | None = text_child("fileName")
    start_timestamp: str | None = text_child("startTimestamp", go_time=True)
    end_timestamp: str | None = text_child("endTimestamp", go_time=True)
    completed: bool | None = text_child(as_type=bool)
    failed: bool | None = text_child(as_type=bool)
    failure_reason: str | None = text_child("failureReason")


@element("kubevirt", namespace=KUBEVIRT_NS, declare=f' xmlns="{KUBEVIRT_NS}"')
class KubeVirtMetadata(XMLElement):
    uid: str | None = text_child(default="", go="UID")
    grace_period: GracePeriodMetadata | None = child(GracePeriodMetadata)
    migration: MigrationMetadata | None = child(MigrationMetadata)
    access_credential: AccessCredentialMetadata | None = child(AccessCredentialMetadata)
    memory_dump: MemoryDumpMetadata | None = child(MemoryDumpMetadata)


@element("metadata")
class Metadata(XMLElement):
    kubevirt: KubeVirtMetadata = child(KubeVirtMetadata, required=True, go="KubeVirt")
