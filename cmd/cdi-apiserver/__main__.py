# ruff: noqa: N999  (the folder is named like the binary)
"""``python -m kubevirt_cmd.cdi_apiserver``."""

from kubevirt_cmd.cdi_apiserver import main

main()
