// Package cluster runs nodegc as operators install it: the image `make
// image` writes, imported into a real containerd 2.2, and deploy/ applied
// through a real control plane (etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler and a kubelet, v1.36.3, built by
// make kube), whose DaemonSet controller rolls the agent out.
//
// The tests need root, etcd, Prometheus, containerd 2.2 (make deps) and the Kubernetes
// binaries (make kube, found in $NODEGC_KUBE_DIR); without them they skip,
// and under NODEGC_REQUIRE_CONTAINERD=1 (CI) they fail. Every process they
// start is ended and every file, mount and pod they make is removed. They
// share one cluster (suite_test.go: sharedCluster), ended by TestMain.
package cluster
