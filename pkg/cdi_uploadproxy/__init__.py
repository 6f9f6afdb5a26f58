"""cdi-uploadproxy: the HTTPS entry point ``virtctl image-upload`` posts a disk image to (CDI v1.63's
``cdi-uploadproxy``).

A request carries an upload token signed by cdi-apiserver; once the token names a claim whose upload server
is ready, the request is streamed on to that server (``https://cdi-upload-<claim>.<ns>.svc<path>``) over
mutual TLS. ``auth`` checks the token, ``claims`` waits for the claim, ``backend`` holds the TLS towards
upload servers, ``cors`` and ``proxy`` are the HTTP side, ``app`` the process.
"""

from kubevirt.cdi.naming import upload_server_url, upload_service_name

__all__ = ["upload_server_url", "upload_service_name"]
