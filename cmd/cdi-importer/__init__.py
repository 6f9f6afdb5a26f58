"""Entrypoint of cdi-importer, the process of a DataVolume's ``importer-<pvc>`` pod.

Configured by the environment only, as CDI's importer: IMPORTER_SOURCE (http, registry or none),
IMPORTER_ENDPOINT, IMPORTER_CONTENTTYPE, IMPORTER_IMAGE_SIZE, FILESYSTEM_OVERHEAD, PREALLOCATION,
OWNER_UID and the rest of :class:`kubevirt_api.cdi.constants.ImporterEnv`. The outcome is the exit
code and the termination message.
"""

import os
import sys

from kubevirt.cdi_importer.app import run
from kubevirt.service import binary

COMPONENT = "cdi-importer"


@binary(COMPONENT, "Fills a DataVolume's claim from an http(s) URL, a container registry or nothing.")
def main() -> None:
    sys.exit(run(os.environ))
