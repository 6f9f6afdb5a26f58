//go:build tools

// Package kubernetes pins the Kubernetes components that hack/cluster-up runs; hack/cluster/build-kubernetes
// builds them from this module into a cache outside the repository.
package kubernetes

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-proxy"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
