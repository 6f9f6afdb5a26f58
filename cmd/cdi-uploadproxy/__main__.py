"""``python -m kubevirt_cmd.cdi_uploadproxy``."""  # noqa: N999 (the folder is named like the binary)

from kubevirt_cmd.cdi_uploadproxy import main

main()
