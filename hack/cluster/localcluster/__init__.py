"""A single-node Kubernetes cluster on this machine: etcd, the control plane, a kubelet with containerd."""
