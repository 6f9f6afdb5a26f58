"""One run of the clone source, start to exit code, as CDI's cdi-cloner image (its startup script and
the program) runs it: measure the source, stream it to the target's upload server, and report.

The outcome is the exit code (the script's 1 for its own checks, klog's 255 for any other failure)
and the termination message: ``Clone Complete`` (", Preallocation applied" added when preallocation
was asked for) on success, the failure's one line otherwise. There are no retries here: the pod's
restart policy (OnFailure) runs the whole clone again."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Final

from kubevirt.cdi_cloner.config import EXIT_FATAL, EXIT_STARTUP, ClonerConfig, ConfigError
from kubevirt.cdi_cloner.progress import CountingReader, Progress, serve
from kubevirt.cdi_cloner.source import SourceError, open_source, upload_bytes
from kubevirt.cdi_cloner.upload import UploadError, send, tls_context
from kubevirt.log import get_logger
from kubevirt_api.cdi.constants import METRICS_PORT, ImporterPaths

CLONE_COMPLETE: Final = "Clone Complete"
PREALLOCATION_APPLIED: Final = "Preallocation applied"  # CDI's common.PreallocationApplied
MAX_MESSAGE: Final = 4096  # what kubelet keeps of a termination message


def run(
    env: Mapping[str, str],
    *,
    termination_log: Path = Path(ImporterPaths.TERMINATION_LOG),
    metrics_port: int | None = METRICS_PORT,
) -> int:
    """Clone as the environment says; the exit code. ``metrics_port`` None serves no progress."""
    log = get_logger()
    try:
        config = ClonerConfig.from_env(env)
    except ConfigError as err:
        return _fail(termination_log, str(err), err.exit_code)
    log.info("Starting cloner", content_type=config.content_type, mount=str(config.mount_point))
    try:
        total = upload_bytes(config)
    except OSError as err:  # the startup script's blockdev or pushd failing
        return _fail(termination_log, f"Unable to measure {config.mount_point}: {err}", EXIT_STARTUP)
    log.info("upload-bytes", upload_bytes=total, preallocation=config.preallocation)
    progress = Progress(config.owner_uid)
    try:
        source = open_source(config)
    except SourceError as err:
        return _fail(termination_log, str(err), EXIT_FATAL)
    try:
        if metrics_port is not None:
            _serve_metrics(progress, metrics_port)
        body = send(config, CountingReader(source, total, progress), tls_context(config))
    except (UploadError, SourceError) as err:
        return _fail(termination_log, str(err), EXIT_FATAL)
    except Exception as err:  # never a traceback for a message: the controller shows it to users
        log.exception("clone failed")
        return _fail(termination_log, f"Clone failed: {err}", EXIT_FATAL)
    finally:
        source.close()
    log.info("clone complete", response=body[:1024].decode(errors="replace"))
    message = CLONE_COMPLETE + (f", {PREALLOCATION_APPLIED}" if config.preallocation else "")
    try:
        _write(termination_log, message)
    except OSError as err:
        log.error("could not create termination message file", error=str(err))
        return 1
    return 0


def _serve_metrics(progress: Progress, port: int) -> None:
    try:
        serve(progress, port)
    except OSError as err:  # progress is a nicety: the clone goes on without it, as in CDI
        get_logger().error("Unable to serve the clone progress", error=str(err))


def _fail(termination_log: Path, message: str, code: int) -> int:
    get_logger().error(message)
    try:
        _write(termination_log, message)
    except OSError as err:
        get_logger().error("could not write the termination message", error=str(err))
    return code


def _write(path: Path, message: str) -> None:
    """One line (newlines become spaces, as CDI writes it), cut to what kubelet keeps."""
    path.write_bytes(message.replace("\n", " ").encode()[:MAX_MESSAGE])
