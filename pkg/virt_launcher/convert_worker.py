"""The converter in a helper process, so the long-lived launcher does not carry it.

Converting needs the whole typed API and the converter (about half of a launcher's memory), but only
until the domain is defined. The launcher starts this worker early (so the first sync does not wait for
its imports), asks it for domain XML over a pipe (one JSON line per request and per answer), and stops it
after the conversion; a later conversion (a re-definition, a migration target's check) starts it again.
"""

from __future__ import annotations

import base64
import contextlib
import json
import subprocess
import sys
import threading
from collections.abc import Mapping
from typing import Any

from kubevirt.virt_launcher import reaper


class ConversionWorkerError(RuntimeError):
    """The worker process failed (not the conversion: that is a ``ValueError``)."""


class ConversionWorker:
    """A callable converter backed by a worker process; thread-safe."""

    def __init__(self, *, use_emulation: bool, ovmf_path: str = "", stop_after_use: bool = True) -> None:
        self._use_emulation = use_emulation
        self._ovmf_path = ovmf_path
        self._stop_after_use = stop_after_use
        self._lock = threading.Lock()
        self._process: subprocess.Popen[str] | None = None

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def start(self) -> None:
        with self._lock:
            self._ensure_started()

    def stop(self) -> None:
        with self._lock:
            process, self._process = self._process, None
        if process is not None:
            _discard(process)

    def __call__(self, vmi: Mapping[str, Any], options: Any) -> str:
        request = {
            "vmi": vmi,
            "options": base64.b64encode(options.SerializeToString()).decode()
            if options is not None
            else None,
        }
        with self._lock:
            for attempt in (1, 2):
                process = self._ensure_started()
                try:
                    assert process.stdin is not None
                    assert process.stdout is not None
                    process.stdin.write(json.dumps(request) + "\n")
                    process.stdin.flush()
                    line = process.stdout.readline()
                except (BrokenPipeError, OSError):
                    line = ""
                if line:
                    break
                # It died: collect it (an uncollected worker stays a zombie the reaper must leave alone)
                # and start a fresh one once.
                self._process = None
                _discard(process)
                if attempt == 2:
                    raise ConversionWorkerError(f"the conversion worker exited with {process.returncode}")
        if self._stop_after_use:
            self.stop()
        answer: dict[str, str] = json.loads(line)
        if "error" in answer:
            raise ValueError(answer["error"])
        return answer["xml"]

    def _ensure_started(self) -> subprocess.Popen[str]:
        if self._process is None or self._process.poll() is not None:
            command = [sys.executable, "-m", __name__]
            if self._use_emulation:
                command.append("--use-emulation")
            if self._ovmf_path:
                command += ["--ovmf-path", self._ovmf_path]
            self._process = reaper.start_owned(
                lambda: subprocess.Popen(
                    command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1
                )
            )
        return self._process


def _discard(process: subprocess.Popen[str]) -> None:
    """Close the worker's pipes, let it end (ending it if it will not) and collect its exit status."""
    for pipe in (process.stdin, process.stdout):
        if pipe is not None:
            with contextlib.suppress(OSError):  # a dead worker's unflushed input cannot be written
                pipe.close()
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    reaper.forget(process.pid)


def serve(use_emulation: bool, ovmf_path: str = "") -> None:
    """The worker's loop: one JSON request per stdin line, one JSON answer per stdout line."""
    from kubevirt.handler_launcher_com.cmd.v1 import cmd_pb2
    from kubevirt.virt_launcher.domain_converter import make_converter

    convert = make_converter(use_emulation=use_emulation, ovmf_path=ovmf_path)
    for line in sys.stdin:
        request = json.loads(line)
        options = None
        if request.get("options") is not None:
            options = cmd_pb2.VirtualMachineOptions.FromString(base64.b64decode(request["options"]))
        try:
            answer = {"xml": convert(request["vmi"], options)}
        except (ValueError, KeyError, TypeError) as err:
            answer = {"error": str(err)}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    arguments = sys.argv[1:]
    ovmf = arguments[arguments.index("--ovmf-path") + 1] if "--ovmf-path" in arguments else ""
    serve("--use-emulation" in arguments, ovmf)
