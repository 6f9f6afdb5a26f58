"""The export token (KubeVirt's ``GenerateVMExportToken``): made by virt-controller for an export that
names no token Secret and by ``virtctl vmexport`` for the exports it creates, kept under
:data:`TOKEN_SECRET_KEY` in its Secret, and presented to the export server (and the proxy before it) in
the :data:`TOKEN_HEADER` header or query parameter.
"""

from __future__ import annotations

import secrets
import string
from typing import Final

TOKEN_HEADER: Final = "x-kubevirt-export-token"
TOKEN_SECRET_KEY: Final = "token"
TOKEN_LENGTH: Final = 20
_TOKEN_ALPHABET: Final = string.digits + string.ascii_uppercase + string.ascii_lowercase


def new_token() -> str:
    """20 random letters and digits, from the system's secure source."""
    return "".join(secrets.choice(_TOKEN_ALPHABET) for _ in range(TOKEN_LENGTH))
