"""virt-controller's reconcilers: VM, VMI, VMI replica set, VM pool and node.

Each controller is a class with ``reconcile(key)``; it reads only from informer stores, writes through
the ``KubeApi`` protocol, records events through ``EventSink`` and guards every create and delete with
expectations, so a stale cache never makes it act twice. The ``on_*`` methods hold the informer event
handlers' logic (which keys to enqueue, which expectations an observed add or delete satisfies); the
process wiring only connects informers to them.
"""
