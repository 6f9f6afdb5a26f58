module kubevirt.io/hack/cluster/pause

go 1.21
