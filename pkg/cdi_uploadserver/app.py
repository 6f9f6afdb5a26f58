"""One run of the upload server, start to exit code, as CDI's cdi-uploadserver: the outcome is the
exit code and the termination message (JSON when the process exits 0)."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Mapping
from typing import Final

from kubevirt.cdi_importer import termination
from kubevirt.cdi_importer.config import Paths
from kubevirt.cdi_importer.termination import TerminationMessage
from kubevirt.cdi_uploadserver.config import ConfigError, ServerConfig
from kubevirt.cdi_uploadserver.processing import Uploads
from kubevirt.cdi_uploadserver.server import RunResult, ServerError, UploadServer
from kubevirt.log import get_logger

UPLOAD_COMPLETE: Final = "Upload Complete"
CLONE_COMPLETE: Final = "Clone Complete"
DEADLINE_PASSED: Final = "Deadline Passed"


def run(env: Mapping[str, str], paths: Paths | None = None) -> int:
    """Serve one upload as the environment says; the exit code. ``paths`` (the scratch directory and
    the termination log; tests move them) defaults to the pod's."""
    paths = paths or Paths()
    log = get_logger()
    try:
        config = ServerConfig.from_env(env)
        server = UploadServer(config, Uploads(config, paths))
        log.info("Running server", address=config.address, port=config.port)
        result = asyncio.run(server.run())
    except ConfigError as err:
        return _fail(paths, str(err))
    except ServerError as err:
        return _fail(paths, f"UploadServer failed: {err}")
    except (OSError, ssl.SSLError) as err:
        return _fail(paths, f"UploadServer failed: Error creating upload listener: {err}")
    termination.write(paths.termination_log, termination_message(result).to_json())
    log.info("UploadServer successfully exited")
    return 0


def termination_message(result: RunResult) -> TerminationMessage:
    if result.deadline_passed:
        return TerminationMessage(deadline_passed=True, message=DEADLINE_PASSED)
    return TerminationMessage(
        preallocation_applied=result.preallocation_applied,
        message=CLONE_COMPLETE if result.clone_target else UPLOAD_COMPLETE,
    )


def _fail(paths: Paths, message: str) -> int:
    get_logger().error(message)
    try:
        termination.write(paths.termination_log, message)
    except OSError as err:
        get_logger().error("could not write the termination message", error=str(err))
    return 1
