"""KubeVirt's admission rules as a pure library: no I/O, no clocks, no Kubernetes client.

virt-api's webhooks and ``virtctl validate`` share this package. Everything works on the objects' JSON
form (camelCase dicts as they arrive in an AdmissionReview), so a rule sees exactly what KubeVirt's
webhook sees and a malformed object can only produce causes, never a crash.

- :mod:`.causes` — the ``StatusCause`` model and KubeVirt's cause types.
- :mod:`.field` — field paths printed the way Kubernetes' ``field.Path`` prints them.
- :mod:`.config` — the cluster settings a rule may depend on (feature gates, rollout strategy, ...).
- :mod:`.review` / :mod:`.response` — AdmissionReview decoding and KubeVirt's response encoding.
- :mod:`.jsonpatch` — RFC 6902 patches from a before/after pair.
- rule modules (``vmi_*``, ``vm``, ``migration``, ``replicaset``, ``pool``, ``kubevirt_cr``,
  ``eviction``, ``status``) — one admitter each; cluster state comes in as arguments.
"""
