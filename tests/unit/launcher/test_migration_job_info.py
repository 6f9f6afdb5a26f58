"""GetDomainStats' ``MigrateDomainJobInfo``: libvirt's statistics of the migration the domain is leaving
by, in KubeVirt's ``DomainJobInfo`` shape, and all flags false when no migration runs."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import libvirt
import pytest

from kubevirt.virt_launcher.virtwrap.manager import DomainManager
from kubevirt.virt_launcher.virtwrap.node import NodeFacts
from kubevirt.virt_launcher.virtwrap.stats import job_info, migration_job_info

UNSET = {
    "DataTotalSet": False,
    "DataTotal": 0,
    "DataProcessedSet": False,
    "DataProcessed": 0,
    "MemoryBpsSet": False,
    "MemoryBps": 0,
    "DataRemainingSet": False,
    "DataRemaining": 0,
    "MemDirtyRateSet": False,
    "MemDirtyRate": 0,
}
# What libvirt-python's jobStats() gives during a pre-copy migration out (trimmed).
MIGRATING_OUT: dict[str, Any] = {
    "type": libvirt.VIR_DOMAIN_JOB_UNBOUNDED,
    "operation": libvirt.VIR_DOMAIN_JOB_OPERATION_MIGRATION_OUT,
    "time_elapsed": 1200,
    "data_total": 4_000_000_000,
    "data_processed": 1_000_000_000,
    "data_remaining": 3_000_000_000,
    "memory_total": 4_000_000_000,
    "memory_bps": 120_000_000,
    "memory_dirty_rate": 2500,
    "memory_page_size": 4096,
    "memory_iteration": 1,
}


class FakeDomain:
    def __init__(self, job: dict[str, Any] | libvirt.libvirtError) -> None:
        self.job = job

    def jobStats(self, flags: int = 0) -> dict[str, Any]:  # noqa: N802 - libvirt-python's name
        assert flags == 0  # the running job, not the last completed one
        if isinstance(self.job, libvirt.libvirtError):
            raise self.job
        return dict(self.job)

    # What domain_stats reads besides the job.
    def info(self) -> list[int]:
        return [libvirt.VIR_DOMAIN_RUNNING, 262144, 131072, 1, 10]

    def name(self) -> str:
        return "default_testvmi"

    def UUIDString(self) -> str:  # noqa: N802
        return "5b8a2e6c-0000-4000-8000-000000000001"

    def XMLDesc(self, flags: int = 0) -> str:  # noqa: N802
        return "<domain><devices/></domain>"

    def memoryStats(self) -> dict[str, int]:  # noqa: N802
        return {"rss": 1024}

    def vcpuPinInfo(self, flags: int) -> tuple[tuple[bool, ...], ...]:  # noqa: N802
        return ((True,),)


class FakeConn:
    def __init__(self, dom: FakeDomain | None) -> None:
        self.dom = dom

    def listAllDomains(self) -> list[FakeDomain]:  # noqa: N802
        return [self.dom] if self.dom else []

    def domainListGetStats(self, doms: list[FakeDomain], stats: int, flags: int) -> list[Any]:  # noqa: N802
        return [(dom, {"cpu.time": 10}) for dom in doms]


def libvirt_error(code: int) -> libvirt.libvirtError:
    err = libvirt.libvirtError("refused")
    err.err = (code, libvirt.VIR_FROM_QEMU, "refused", libvirt.VIR_ERR_ERROR, None, None, None, 0, 0)
    return err


@pytest.fixture
def manager_of() -> Iterator[Any]:
    managers: list[DomainManager] = []

    def make(dom: FakeDomain | None) -> DomainManager:
        conn: Any = FakeConn(dom)
        managers.append(DomainManager(conn, lambda *_: "", node=NodeFacts()))
        return managers[-1]

    yield make
    for manager in managers:
        manager.close()


def test_a_migration_out_gives_kubevirts_fields_and_the_dirty_rate_in_bytes() -> None:
    info = migration_job_info(FakeDomain(MIGRATING_OUT))
    assert info == {
        "DataTotalSet": True,
        "DataTotal": 4_000_000_000,
        "DataProcessedSet": True,
        "DataProcessed": 1_000_000_000,
        "MemoryBpsSet": True,
        "MemoryBps": 120_000_000,
        "DataRemainingSet": True,
        "DataRemaining": 3_000_000_000,
        "MemDirtyRateSet": True,
        "MemDirtyRate": 2500 * 4096,
    }
    assert list(info) == list(UNSET)  # the Go struct's field order


@pytest.mark.parametrize(
    "job",
    [
        {"type": libvirt.VIR_DOMAIN_JOB_NONE},
        {**MIGRATING_OUT, "operation": libvirt.VIR_DOMAIN_JOB_OPERATION_MIGRATION_IN},  # the target's job
        {**MIGRATING_OUT, "operation": libvirt.VIR_DOMAIN_JOB_OPERATION_BACKUP},
        {**MIGRATING_OUT, "type": libvirt.VIR_DOMAIN_JOB_COMPLETED},
        libvirt_error(libvirt.VIR_ERR_OPERATION_INVALID),
    ],
    ids=["no-job", "migration-in", "backup", "completed", "libvirt-error"],
)
def test_anything_but_a_running_migration_out_sets_no_flag(
    job: dict[str, Any] | libvirt.libvirtError,
) -> None:
    assert migration_job_info(FakeDomain(job)) == UNSET


def test_a_dirty_rate_without_its_page_size_is_not_reported() -> None:
    info = job_info({"memory_dirty_rate": 2500, "data_remaining": 0})
    assert (info["MemDirtyRateSet"], info["MemDirtyRate"]) == (False, 0)
    assert (info["DataRemainingSet"], info["DataRemaining"]) == (True, 0)  # zero left is a value


def test_get_domain_stats_carries_the_running_migrations_job_info(manager_of: Any) -> None:
    stats = manager_of(FakeDomain(MIGRATING_OUT)).get_domain_stats()
    assert stats is not None
    assert stats["MigrateDomainJobInfo"]["DataRemaining"] == 3_000_000_000
    assert stats["MigrateDomainJobInfo"]["MemDirtyRate"] == 2500 * 4096


def test_get_domain_stats_without_a_migration_has_an_unset_job_info(manager_of: Any) -> None:
    # KubeVirt's launcher always sends the struct, zeroed, never null.
    stats = manager_of(FakeDomain({"type": libvirt.VIR_DOMAIN_JOB_NONE})).get_domain_stats()
    assert stats is not None
    assert stats["MigrateDomainJobInfo"] == UNSET
    assert manager_of(None).get_domain_stats() is None
