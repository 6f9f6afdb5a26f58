"""``python -m kubevirt_cmd.cdi_cloner``."""  # noqa: N999 (the folder is named like the binary)

from kubevirt_cmd.cdi_cloner import main

main()
