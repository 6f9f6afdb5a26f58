"""The domain pipeline in a helper process, so the long-lived launcher does not carry it.

Building a domain needs the typed API (pydantic models of the whole VMI) and the converter: together
about 12 MiB of the launcher's anonymous memory and a third of a second of imports, needed only until
the domain is defined. The launcher starts this worker early (so the first sync does not wait for its
imports), hands it the request's VMI JSON as received, virt-handler's options and the node's facts (one
JSON line per request), and gets back the domain XML the pipeline serialised (one JSON line per
answer); it stops the worker after the conversion, and a later conversion (a re-definition, a migration
target's check) starts it again.
"""

from __future__ import annotations

import base64
import contextlib
import json
import subprocess
import sys
import threading
from typing import TYPE_CHECKING, Any

from kubevirt.virt_launcher import reaper

if TYPE_CHECKING:  # kept light: virt-launcher imports this module before anything else
    from kubevirt.virt_launcher.virtwrap.node import NodeFacts


class ConversionWorkerError(RuntimeError):
    """The worker process failed (not the conversion: that is a ``ValueError``)."""


class ConversionWorker:
    """A callable converter backed by a worker process; thread-safe."""

    def __init__(self, *, stop_after_use: bool = True) -> None:
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

    def __call__(self, vmi_json: bytes, options: Any, node: NodeFacts) -> str:
        """The domain XML for the VMI JSON; a ``ValueError`` names the VMI field at fault."""
        request = {
            "vmi": vmi_json.decode(errors="replace"),
            "options": base64.b64encode(options.SerializeToString()).decode()
            if options is not None
            else None,
            "node": node.to_json(),
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
            # A separate process for memory: the typed API and the converter it imports stay out of the
            # long-lived launcher (see the module docstring); it exits again after the conversion.
            command = [sys.executable, "-m", __name__]
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


def serve() -> None:
    """The worker's loop: one JSON request per stdin line, one JSON answer per stdout line."""
    from kubevirt.handler_launcher_com.cmd.v1 import cmd_pb2
    from kubevirt.virt_launcher.virtwrap.domain_pipeline import domain_xml
    from kubevirt.virt_launcher.virtwrap.node import NodeFacts

    for line in sys.stdin:
        request = json.loads(line)
        options = None
        if request.get("options") is not None:
            options = cmd_pb2.VirtualMachineOptions.FromString(base64.b64decode(request["options"]))
        try:
            answer = {"xml": domain_xml(request["vmi"], options, NodeFacts.from_json(request["node"]))}
        except (ValueError, KeyError, TypeError) as err:
            answer = {"error": str(err)}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    serve()
