"""The domain pipeline in a helper process, so the long-lived launcher does not carry it.

Building a domain needs the typed API (pydantic models of the whole VMI) and the converter: together
about 12 MiB of the launcher's anonymous memory and a third of a second of imports, needed only until
the domain is defined. The launcher starts this worker early, so the first sync does not wait for its
imports: as a fork of itself while still single-threaded, right after its own imports, so the worker
inherits what both need (the domain XML model, protobuf, logging: with a fresh interpreter's start about
0.2 CPU-seconds, seconds under a pod's CPU limit) and imports only the rest. Per request the launcher
writes one JSON header line (the node's facts and the sizes of what follows), then the request's VMI JSON
and virt-handler's serialised options as received, byte for byte: the worker decodes each once. It gets
back the domain XML the pipeline serialised (one JSON line per answer); it stops the worker after the
conversion, and a later conversion (a re-definition, a migration target's check) starts it again.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import select
import signal
import subprocess
import sys
import threading
from typing import IO, TYPE_CHECKING, Any, Protocol

from kubevirt.virt_launcher import reaper

if TYPE_CHECKING:  # kept light: virt-launcher imports this module before anything else
    from kubevirt.virt_launcher.virtwrap.node import NodeFacts
    from kubevirt.virt_launcher.virtwrap.vmi import VMIFacts


class _Worker(Protocol):
    """What the converter needs of its worker process: a ``subprocess.Popen`` or a :class:`ForkedWorker`."""

    @property
    def pid(self) -> int: ...
    @property
    def stdin(self) -> IO[bytes] | None: ...
    @property
    def stdout(self) -> IO[bytes] | None: ...
    @property
    def returncode(self) -> int | Any: ...
    def poll(self) -> int | None: ...
    def wait(self, timeout: float | None = None) -> int: ...
    def kill(self) -> None: ...


class ForkedWorker:
    """The worker as a fork of this process, serving on two pipes; ``Popen``'s ways to watch and end it.

    Fork only a single-threaded process: another thread's locks would stay held in the child forever.
    """

    def __init__(self) -> None:
        request_read, request_write = os.pipe()
        answer_read, answer_write = os.pipe()
        # Kept out of the collector's reach, the inherited objects are not written to (copied) by the
        # child's garbage collections.
        gc.freeze()
        pid = os.fork()
        if pid == 0:  # the worker
            # Short-lived and making few cycles: no collections, which would also copy the inherited
            # objects they visit (half of its CPU to the first answer).
            gc.disable()
            code = 1
            try:
                os.close(request_write)
                os.close(answer_read)
                serve(os.fdopen(request_read, "rb"), os.fdopen(answer_write, "wb"))
                code = 0
            finally:
                os._exit(code)  # never the parent's exit handlers, nor its buffered output
        gc.unfreeze()
        os.close(request_read)
        os.close(answer_write)
        self.pid = pid
        self.returncode: int | None = None
        self.stdin: IO[bytes] | None = os.fdopen(request_write, "wb")
        self.stdout: IO[bytes] | None = os.fdopen(answer_read, "rb")

    def poll(self) -> int | None:
        if self.returncode is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.poll() is None:
            pidfd = os.pidfd_open(self.pid)  # readable once the child exits
            try:
                ready, _, _ = select.select([pidfd], [], [], timeout)
            finally:
                os.close(pidfd)
            if not ready:
                raise subprocess.TimeoutExpired(f"conversion worker {self.pid}", timeout or 0)
            _, status = os.waitpid(self.pid, 0)
            self.returncode = os.waitstatus_to_exitcode(status)
        assert self.returncode is not None
        return self.returncode

    def kill(self) -> None:
        if self.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)


class ConversionWorkerError(RuntimeError):
    """The worker process failed (not the conversion: that is a ``ValueError``)."""


class ConversionWorker:
    """A callable converter backed by a worker process; thread-safe."""

    def __init__(self, *, stop_after_use: bool = True) -> None:
        self._stop_after_use = stop_after_use
        self._lock = threading.Lock()
        self._process: _Worker | None = None

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

    def __call__(self, vmi: VMIFacts, options: Any, node: NodeFacts) -> str:
        """The domain XML for the VMI; a ``ValueError`` names the VMI field at fault."""
        encoded_options = options.SerializeToString() if options is not None else None
        header = {
            "vmi": len(vmi.raw),
            "options": len(encoded_options) if encoded_options is not None else None,
            "node": node.to_json(),
        }
        request = json.dumps(header).encode() + b"\n" + vmi.raw + (encoded_options or b"")
        with self._lock:
            for attempt in (1, 2):
                process = self._ensure_started()
                try:
                    assert process.stdin is not None
                    assert process.stdout is not None
                    process.stdin.write(request)
                    process.stdin.flush()
                    line = process.stdout.readline()
                except (BrokenPipeError, OSError):
                    line = b""
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

    def _ensure_started(self) -> _Worker:
        if self._process is None or self._process.poll() is not None:
            # A separate process for memory: the typed API and the converter it imports stay out of the
            # long-lived launcher (see the module docstring); it exits again after the conversion.
            self._process = reaper.start_owned(_start_worker)
        return self._process


def _start_worker() -> _Worker:
    if threading.active_count() == 1:
        return ForkedWorker()
    # Threads run (a later conversion, once the launcher serves): a fresh interpreter.
    return subprocess.Popen([sys.executable, "-m", __name__], stdin=subprocess.PIPE, stdout=subprocess.PIPE)


def _discard(process: _Worker) -> None:
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


def serve(requests: IO[bytes] = sys.stdin.buffer, answers: IO[bytes] = sys.stdout.buffer) -> None:
    """The worker's loop: per request a JSON header line, the VMI JSON and the options; one JSON answer
    line each."""
    from kubevirt.handler_launcher_com.cmd.v1 import cmd_pb2
    from kubevirt.virt_launcher.virtwrap.domain_pipeline import domain_xml
    from kubevirt.virt_launcher.virtwrap.node import NodeFacts

    while line := requests.readline():
        header = json.loads(line)
        vmi_json = _read_exactly(requests, header["vmi"])
        options = None
        if header.get("options") is not None:
            options = cmd_pb2.VirtualMachineOptions.FromString(_read_exactly(requests, header["options"]))
        try:
            answer = {"xml": domain_xml(vmi_json, options, NodeFacts.from_json(header["node"]))}
        except (ValueError, KeyError, TypeError) as err:
            answer = {"error": str(err)}
        answers.write(json.dumps(answer).encode() + b"\n")
        answers.flush()


def _read_exactly(stream: IO[bytes], size: int) -> bytes:
    data = stream.read(size)
    if len(data) != size:
        raise EOFError(f"the request ended after {len(data)} of {size} bytes")
    return data


if __name__ == "__main__":
    serve()
