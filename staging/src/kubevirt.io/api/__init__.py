"""KubeVirt's API types (``kubevirt.io/api``), importable on their own as ``kubevirt_api``.

* ``kubevirt_api.core.v1`` — every ``kubevirt.io/v1`` type (VirtualMachineInstance, VirtualMachine,
  VirtualMachineInstanceMigration, VirtualMachineInstanceReplicaSet, KubeVirt, subresource bodies…) as
  pydantic models with KubeVirt's JSON names; ``Model.from_dict(json)`` parses (errors name the JSON field
  path), ``obj.to_dict()`` dumps. ``core.v1.constants`` holds the well-known labels, annotations and
  finalizers; ``core.v1.defaults`` the API-level defaults (``SetObjectDefaults_*``); ``core.v1.register``
  the group versions, kinds and a kind → model scheme (``new_object(VirtualMachine, ...)``). The top-level
  models carry KubeVirt's predicates (``vmi.is_final()``, ``vm.run_strategy()``, ``migration.is_running()``).
* ``kubevirt_api.pool.v1alpha1`` — VirtualMachinePool.
* ``kubevirt_api.gojson.to_go_json(obj)`` — the exact JSON KubeVirt's Go code writes for ``obj`` (fields
  Go always writes, ``omitempty`` rules, field order), where ``to_dict()`` only writes what is set.
* ``kubevirt_api.resource.Quantity`` — Kubernetes quantities with Go's exact semantics.
* ``kubevirt_api.openapi.crd_schema(kind)`` — the structural OpenAPI schema of a kind's CRD;
  ``kubevirt_api.crd.custom_resource_definition(kind)`` — the whole CRD (``hack/generate`` writes them to
  ``manifests/generated/``).
* ``kubevirt_api.k8s`` — the Kubernetes types those objects embed.
* ``kubevirt_api.cdi`` — CDI's ``cdi.kubevirt.io`` types (``cdi.v1beta1``: DataVolume, CDI, CDIConfig,
  StorageProfile, DataSource), wire names (``cdi.constants``) and the CRDs the project serves in CDI's
  place (``cdi.crds``; ``hack/generate`` writes them to ``manifests/cdi/``).
"""
