"""Benchmark: what admitting a VMI costs, step by step, and served over HTTPS by the webhook server.

Run with ``hack/test tests/perf/test_admission_bench.py -s`` (or ``python`` on this file) to see the numbers.
"""

from __future__ import annotations

import asyncio
import json
import ssl
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiohttp

# The shared test helpers; pytest adds them to the path, a script run does it here.
sys.path.insert(0, str(Path(__file__).parents[1] / "lib"))

from kubevirt.admission import defaulting, pipeline
from kubevirt.admission.schema import schema_check
from kubevirt.admission.vmi_create import admit_vmi_create
from kubevirt.service.tls import ReloadingCertificate
from kubevirt.virt_api.app import build_context
from kubevirt.virt_api.webhooks.routes import webhook_handlers
from kubevirt.virt_api.webhooks.server import WebhookServer
from kubevirt.virt_config import ClusterConfig
from kubevirt_testing.certificates import self_signed, write_pair

CASES = Path(__file__).parents[1] / "testdata" / "conformance" / "vmi" / "valid"
CONFIG = ClusterConfig()


def _per_call_us(func: Callable[[], Any], rounds: int) -> float:
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        for _ in range(rounds):
            func()
        best = min(best, time.perf_counter() - start)
    return best / rounds * 1e6


async def _served_per_second(review: bytes, requests: int, concurrency: int) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        certificate = ReloadingCertificate(*write_pair(self_signed("bench"), Path(tmp)))
        server = WebhookServer(webhook_handlers(build_context(CONFIG)))
        listening = await server.listen("127.0.0.1", 0, certificate.server_context)
        port = listening.port
        client_tls = ssl.create_default_context()
        client_tls.check_hostname = False
        client_tls.verify_mode = ssl.CERT_NONE
        url = f"https://127.0.0.1:{port}/virtualmachineinstances-validate-create"
        headers = {"Content-Type": "application/json"}
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=client_tls)) as session:

            async def worker(count: int) -> None:
                for _ in range(count):
                    async with session.post(url, data=review, headers=headers) as reply:
                        assert reply.status == 200
                        assert (await reply.json())["response"]["allowed"] is True

            start = time.perf_counter()
            await asyncio.gather(*(worker(requests // concurrency) for _ in range(concurrency)))
            elapsed = time.perf_counter() - start
        await listening.close()
    return requests / elapsed


def measure() -> dict[str, str]:
    results: dict[str, str] = {}
    for name in ("001-minimal-containerdisk", "069-kitchen-sink"):
        raw = json.loads((CASES / f"{name}.json").read_text())
        defaulted = json.loads((CASES / f"{name}.defaults.json").read_text())
        assert admit_vmi_create(defaulted, CONFIG) == []
        rounds = 300
        results[f"rules only        {name}"] = (
            f"{_per_call_us(lambda d=defaulted: admit_vmi_create(d, CONFIG), rounds):8.1f} us/op"
        )
        results[f"schema check      {name}"] = (
            f"{_per_call_us(lambda r=raw: schema_check('VirtualMachineInstance', r), rounds):8.1f} us/op"
        )

        def full(r: Any = raw) -> None:
            outcome = pipeline.validate_vmi_create(
                r, CONFIG, defaulter=defaulting.vmi_defaults, schema=schema_check
            )
            assert outcome.accepted

        results[f"full VMI admission {name}"] = f"{_per_call_us(full, rounds // 3):8.1f} us/op"
    review = json.dumps(
        {
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "request": {
                "uid": "bench",
                "operation": "CREATE",
                "resource": {"group": "kubevirt.io", "version": "v1", "resource": "virtualmachineinstances"},
                "object": json.loads((CASES / "069-kitchen-sink.defaults.json").read_text()),
            },
        }
    ).encode()
    rate = asyncio.run(_served_per_second(review, requests=400, concurrency=8))
    results["HTTPS validate-create 069-kitchen-sink, 8 clients"] = f"{rate:8.0f} reviews/s"
    return results


def test_admission_speed_is_reported() -> None:
    for label, value in measure().items():
        print(f"{label}: {value}")


if __name__ == "__main__":
    test_admission_speed_is_reported()
