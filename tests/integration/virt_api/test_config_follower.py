"""virt-api keeps following the KubeVirt CR after a read that fails in an unexpected way."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from kubevirt.virt_api.app import build_context, follow_config
from kubevirt.virt_config import ClusterConfig

KUBEVIRT = {
    "metadata": {"name": "kubevirt", "namespace": "kubevirt"},
    "spec": {"configuration": {"developerConfiguration": {"featureGates": ["Snapshot"]}}},
}


class FlakyKubeVirts:
    """Answers garbage the first time (a client error that is not a ClusterStateError), then the CR."""

    def __init__(self) -> None:
        self.reads = 0

    def list_kubevirts(self, namespace: str | None) -> list[dict[str, Any]]:
        self.reads += 1
        if self.reads == 1:
            raise ValueError("unexpected answer from the API server")
        return [KUBEVIRT]


def test_the_follower_survives_an_unexpected_read_failure() -> None:
    ctx = build_context(ClusterConfig())
    state = FlakyKubeVirts()
    follower = follow_config(ctx, state, "kubevirt")

    async def run() -> None:
        task = asyncio.get_running_loop().create_task(follower.follow(0.01))
        try:
            for _ in range(500):
                if ctx.config.enabled("Snapshot"):
                    break
                await asyncio.sleep(0.01)
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    asyncio.run(run())
    assert state.reads >= 2
    assert ctx.config.feature_gates == frozenset({"Snapshot"})
