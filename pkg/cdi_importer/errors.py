"""Why an import stops. The messages are CDI's: its controller copies them into the DataVolume's
Running condition and looks for some of their words (a larger PVC, a failed image pull)."""

from __future__ import annotations

import errno as errnos
import os
from typing import Final

# Text CDI's controller looks for to report the reason ImagePullFailed.
IMAGE_PULL_FAILURE: Final = "failed to pull image"
SCRATCH_SPACE_REQUIRED: Final = "scratch space required and none found"
LARGER_PVC_REQUIRED: Final = "A larger PVC is required"


class ImporterError(Exception):
    """An import failed; the message is the termination message's reason."""


class ConnectError(ImporterError):
    """The data source could not be reached or opened."""


class ScratchSpaceRequiredError(ImporterError):
    """The image needs a scratch volume and the pod has none: the controller recreates it with one."""

    def __init__(self) -> None:
        super().__init__(SCRATCH_SPACE_REQUIRED)


class LargerPVCRequiredError(ImporterError):
    """The image does not fit the claim."""

    def __init__(self, virtual_size: int, available: int) -> None:
        super().__init__(
            f"virtual image size {virtual_size} is larger than the reported available storage "
            f"{available}. {LARGER_PVC_REQUIRED}"
        )


class ImagePullFailedError(ImporterError):
    """Reading the source failed part way (CDI reports any such stream error as a failed pull)."""

    def __init__(self, cause: object) -> None:
        super().__init__(f"{IMAGE_PULL_FAILURE}: {cause}")


def wrap(context: str, err: BaseException) -> ImporterError:
    """``err`` prefixed with what was being done, as Go's errors.Wrap reads ("context: cause")."""
    return ImporterError(f"{context}: {err}")


def os_error_text(err: OSError) -> str:
    """An OSError in Go's words ("write /data/disk.img: no space left on device"): CDI's controller
    recognises a full volume by the lower-case system message."""
    if err.errno is None:
        return str(err)
    text = os.strerror(err.errno)
    text = text[:1].lower() + text[1:]
    return f"{err.filename}: {text}" if err.filename else text


def is_no_capacity(err: OSError) -> bool:
    return err.errno in (errnos.ENOSPC, errnos.EDQUOT)
