"""virt-operator: installs, repairs, updates and removes KubeVirt from a KubeVirt custom resource.

``resource/`` generates the install strategy (every object, a pure function of the CR and the images),
``certificates`` the self-signed PKI, ``apply`` writes objects against the caches, ``kubevirt`` is the
CR reconciler with KubeVirt's status, and ``app`` wires informers, the queue and leader election.

Install strategy: KubeVirt dumps each version's strategy into a ConfigMap with a Job running that
version's operator image, so one operator can install another version's objects. This operator
generates the strategy in-process from its own code instead: no Job or ConfigMap, but an upgrade to
other component images keeps the manifests' layout of the running operator (update the operator
first, as KubeVirt's documented upgrade does).
"""
