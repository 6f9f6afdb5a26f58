"""Benchmark: decoding and encoding a large VMI (``069-kitchen-sink``), which happens on every sync.

``to_go_json`` (Go-identical output) is measured too; it is the slower, opt-in encoder.

Run with ``hack/test tests/perf/test_api_parse_bench.py -s`` (or ``python`` on this file) to see the numbers.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from kubevirt_api.core.v1 import VirtualMachineInstance
from kubevirt_api.gojson import to_go_json

CASE = Path(__file__).parents[1] / "testdata" / "conformance" / "vmi" / "valid"
ROUNDS = 500


def _per_call_us(func: Any, arg: Any, rounds: int = ROUNDS) -> float:
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        for _ in range(rounds):
            func(arg)
        best = min(best, time.perf_counter() - start)
    return best / rounds * 1e6


def measure() -> dict[str, float]:
    results: dict[str, float] = {}
    for name in ("069-kitchen-sink.json", "069-kitchen-sink.defaults.json", "001-minimal-containerdisk.json"):
        data = json.loads((CASE / name).read_text())
        vmi = VirtualMachineInstance.from_dict(data)
        assert vmi.to_dict() == {
            **data,
            "metadata": {k: v for k, v in data["metadata"].items() if v is not None},
        }
        results[f"from_dict {name}"] = _per_call_us(VirtualMachineInstance.from_dict, data)
        results[f"to_dict   {name}"] = _per_call_us(VirtualMachineInstance.to_dict, vmi)
        results[f"to_go_json {name}"] = _per_call_us(to_go_json, vmi, rounds=ROUNDS // 5)
    return results


def test_parse_speed_is_reported() -> None:
    for label, micros in measure().items():
        print(f"{label}: {micros:.1f} us/op")


if __name__ == "__main__":
    test_parse_speed_is_reported()
