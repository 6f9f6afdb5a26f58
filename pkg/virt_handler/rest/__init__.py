"""virt-handler's console and lifecycle server (port 8186), which virt-api calls with mutual TLS."""
