"""virt-controller's VirtualMachineExport controller (KubeVirt keeps it in ``pkg/storage/export/export``).

* :mod:`.controller` drives an export: its Service, token Secret, exporter Pod and certificate Secret,
  its status and its end (TTL).
* :mod:`.pvc_source`, :mod:`.vm_source` and :mod:`.snapshot_source` find the claims of each kind of
  source and whether they can be served; :mod:`.volumes` holds what they share.
* :mod:`.manifests`, :mod:`.data_manifest` and :mod:`.certs` build what is created; :mod:`.links`,
  :mod:`.status` and :mod:`.conditions` what is reported; :mod:`.names` the names and keys.

Exports, claims, pods and the other Kubernetes kinds are read from informers as plain JSON objects; VMs
and VMIs as their models.
"""
