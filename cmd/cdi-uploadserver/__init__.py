"""Entrypoint of cdi-uploadserver, the process of a claim's ``cdi-upload-<pvc>`` pod.

Configured by the environment only, as CDI's: TLS_CERT_FILE, TLS_KEY_FILE, CLIENT_CERT_FILE,
CLIENT_NAME, UPLOAD_IMAGE_SIZE, FILESYSTEM_OVERHEAD, PREALLOCATION, TLS_CIPHERS, TLS_MIN_VERSION,
DEADLINE, DESTINATION, LISTEN_ADDRESS and LISTEN_PORT (see :mod:`kubevirt.cdi_uploadserver.config`).
The outcome is the exit code and the termination message.
"""

import os
import sys

from kubevirt.cdi_uploadserver.app import run
from kubevirt.service import binary

COMPONENT = "cdi-uploadserver"


@binary(COMPONENT, "Receives one disk image for a claim over mutual TLS and writes it into the claim.")
def main() -> None:
    sys.exit(run(os.environ))
