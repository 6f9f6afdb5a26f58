"""virt-exportserver: serves one VirtualMachineExport's volumes and manifests over HTTPS.

The export controller starts it in an exporter pod with the volumes mounted read-only and the contract
of :mod:`kubevirt.export.paths` in its environment. Each module here does one of KubeVirt v1.6's jobs:

* :mod:`.config` reads the environment; :mod:`.server` wires the routes and serves until the deadline;
* :mod:`.mux` and :mod:`.httpcompat` answer as Go's ``net/http`` does (path cleaning, redirects, errors);
* :mod:`.token` checks the export token on every data request;
* :mod:`.content` serves a file as ``http.ServeContent`` (ranges, conditions), with :mod:`.ranges`,
  :mod:`.preconditions` and :mod:`.sniff`;
* :mod:`.images` (disk.img, disk.img.gz), :mod:`.archive` (disk.tar.gz), :mod:`.dirserver` (dir/) and
  :mod:`.manifests` (the VM's manifests) are the handlers.

Nothing is ever read whole into memory: files are streamed in chunks read off the event loop.
"""
