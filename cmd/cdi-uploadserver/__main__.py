"""``python -m kubevirt_cmd.cdi_uploadserver``."""  # noqa: N999 (the folder is named like the binary)

from kubevirt_cmd.cdi_uploadserver import main

main()
