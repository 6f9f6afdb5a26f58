"""virt-exportproxy: one HTTPS entry point in front of every VirtualMachineExport's server.

A request for ``/api/export.kubevirt.io/<version>/namespaces/<ns>/virtualmachineexports/<name>/<rest>`` is
passed on to ``https://<status.serviceName>.<ns>.svc/<rest>``, the export's own server, whose certificate
must chain to the export CA (the ``kubevirt-export-ca`` ConfigMap). Bodies are streamed both ways: a disk
image passes through in chunks, never held whole. ``proxy`` is the HTTP side, ``app`` the process
(informers on the exports, the CA and the KubeVirt CR, the listener with its reloading certificate).

asyncio for serving (aiohttp: a download is a long-lived stream, many at once), threads for the informers
(the shared controller runtime); the proxy only reads the informers' stores, which are thread-safe.
"""
