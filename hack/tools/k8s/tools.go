//go:build tools

// Package k8s pins the Kubernetes control-plane binaries that tests and the
// local demo run: kube-apiserver, kube-controller-manager (garbage collector)
// and kubectl, all from k8s.io/kubernetes v1.35.4.
package k8s

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver/app"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
