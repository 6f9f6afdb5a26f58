"""One admitter per KubeVirt validating webhook path, each an ``AdmissionRequest -> AdmissionResponse``.

They adapt :mod:`kubevirt.admission`'s rules to requests: resource check, schema check, decode, rules,
response encoding. Cluster settings and state come from the shared ``WebhookContext``.
"""
