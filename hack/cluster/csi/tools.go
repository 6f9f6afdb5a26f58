//go:build tools

// Package csi pins the Kubernetes CSI project's sidecars, snapshot controller and sanity suite that the local
// cluster's hostpath driver runs with; hack/cluster/build-csi builds them from this module into a cache
// outside the repository.
package csi

import (
	_ "github.com/kubernetes-csi/csi-test/v5/cmd/csi-sanity"
	_ "github.com/kubernetes-csi/external-provisioner/v6/cmd/csi-provisioner"
	_ "github.com/kubernetes-csi/external-resizer/v2/cmd/csi-resizer"
	_ "github.com/kubernetes-csi/external-snapshotter/v8/cmd/csi-snapshotter"
	_ "github.com/kubernetes-csi/external-snapshotter/v8/cmd/snapshot-controller"
)
