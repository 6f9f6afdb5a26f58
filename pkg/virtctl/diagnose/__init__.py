"""``virtctl diagnose``: walk a VM's request from the API to the node and name the first broken link.

One module per link (``vm``, ``vmi``, ``scheduling``, ``containers``, ``node``, ``launcher``,
``migration``), run in order by ``walk``. Every read goes through ``reader.Reader``, which can only get
and list: a diagnosis never writes.
"""

from kubevirt.virtctl.diagnose.verdict import Link, Status
from kubevirt.virtctl.diagnose.walk import LINKS, diagnose

__all__ = ["LINKS", "Link", "Status", "diagnose"]
