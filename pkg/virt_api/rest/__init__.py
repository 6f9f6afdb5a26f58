"""The ``subresources.kubevirt.io`` aggregated API: lifecycle requests, discovery, authorisation."""
