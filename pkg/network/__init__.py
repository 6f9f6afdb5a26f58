"""VM networking on the pod network: KubeVirt's masquerade and bridge bindings.

Phase 1 (:mod:`.setup`) runs in virt-handler, privileged, inside the launcher pod's network namespace:
it discovers the pod interface, builds the bridge and tap (and for masquerade the NAT rules, see
:mod:`.nft`) and caches what phase 2 needs (:mod:`.cache`). Phase 2 runs in virt-launcher, inside the
pod: it completes the domain's ``<interface>`` elements (:mod:`.domainspec`) and serves the guest its
address by DHCP (:mod:`.dhcp`). :mod:`.plan` holds the pure decisions both phases share.
"""
