"""``kubevirt.io/v1``: every type, re-exported from the topic modules.

A topic module loads when one of its names is first asked for (``_exports`` says which module defines
each name): building the pydantic models of every kind costs about 0.3 CPU-seconds, and the launcher's
domain conversion, which runs under its pod's CPU limit, needs only the VMI's.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from kubevirt_api.core.v1._exports import EXPORTS

if TYPE_CHECKING:  # the topic modules whose names this package exports (hack/generate reads this list)
    from kubevirt_api.core.v1.domain import *  # noqa: F403
    from kubevirt_api.core.v1.kubevirt import *  # noqa: F403
    from kubevirt_api.core.v1.migration import *  # noqa: F403
    from kubevirt_api.core.v1.networks import *  # noqa: F403
    from kubevirt_api.core.v1.phases import *  # noqa: F403
    from kubevirt_api.core.v1.preset import *  # noqa: F403
    from kubevirt_api.core.v1.probes import *  # noqa: F403
    from kubevirt_api.core.v1.replicaset import *  # noqa: F403
    from kubevirt_api.core.v1.subresources import *  # noqa: F403
    from kubevirt_api.core.v1.vm import *  # noqa: F403
    from kubevirt_api.core.v1.vmi import *  # noqa: F403
    from kubevirt_api.core.v1.volumes import *  # noqa: F403
else:

    def __getattr__(name: str) -> Any:
        topic = EXPORTS.get(name)
        if topic is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{__name__}.{topic}"), name)
        globals()[name] = value  # later look-ups skip this function
        return value

    def __dir__() -> list[str]:
        return sorted({*globals(), *EXPORTS})
