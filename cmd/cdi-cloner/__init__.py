"""Entrypoint of cdi-cloner, the process of a host-assisted clone's source pod.

Configured by the environment only, as CDI's image (its startup script and cdi-cloner): VOLUME_MODE
(``block`` or ``filesystem``), MOUNT_POINT (the source's mount folder or block device), OWNER_UID,
CLIENT_KEY and CLIENT_CERT (the clone's client key pair, PEM), SERVER_CA_CERT (the upload server's CA,
PEM), UPLOAD_URL and PREALLOCATION (see :mod:`kubevirt.cdi_cloner.config`). The outcome is the exit
code and the termination message.
"""

import os
import sys

from kubevirt.cdi_cloner.app import run
from kubevirt.service import binary

COMPONENT = "cdi-cloner"


@binary(COMPONENT, "Streams one claim's data to the upload server of its clone over mutual TLS.")
def main() -> None:
    sys.exit(run(os.environ))
