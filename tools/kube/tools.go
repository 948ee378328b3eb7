//go:build tools

// Package kube pins the kubelet, kube-apiserver, kube-controller-manager,
// kube-scheduler and kubectl commands of k8s.io/kubernetes v1.36.3 so
// scripts/build-kube.sh can build them with this module's go.sum.
package kube

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
