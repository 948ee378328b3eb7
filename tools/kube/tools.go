//go:build tools

// Package kube pins the kubelet and kube-apiserver commands of
// k8s.io/kubernetes v1.36.3 so scripts/build-kube.sh can build them with
// this module's go.sum.
package kube

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
