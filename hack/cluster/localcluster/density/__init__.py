"""The density benchmark and the fault run: N VMIs (then N VMs) created 100 ms apart through the whole
installed stack, measured as KubeVirt measures itself (creation → Running, API requests per VMI, the
components' CPU and memory) and, with faults, checked for lost, doubled and orphaned objects."""
