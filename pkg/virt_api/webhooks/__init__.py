"""virt-api's admission webhook server: HTTPS, AdmissionReview in and out, KubeVirt's paths.

The rules themselves live in :mod:`kubevirt.admission` (shared with ``virtctl validate``); this package
adapts them to HTTP: ``validating_webhook.admitters`` and ``mutating_webhook.mutators`` mirror KubeVirt's
layout, :mod:`.server` routes and guards requests, :mod:`.tls` serves certificates that may be renewed.
"""
