//go:build tools

// Package tools pins sigs.k8s.io/kustomize/kustomize/v5 so that `go mod tidy`
// keeps it in this module. Build with:
//
//	go build -o ../../../bin/kustomize sigs.k8s.io/kustomize/kustomize/v5
package tools

import (
	_ "sigs.k8s.io/kustomize/kustomize/v5"
)
