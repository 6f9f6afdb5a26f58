"""``virtctl ssh`` and ``virtctl scp``: SSH to a VM or VMI through its ``portforward`` subresource, either by
wrapping the local ``ssh``/``scp`` binaries (the default) or with the built-in client."""
