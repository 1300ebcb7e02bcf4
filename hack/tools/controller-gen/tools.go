//go:build tools

// Package tools pins sigs.k8s.io/controller-tools so that `go mod tidy` keeps
// it in this module. Build with:
//
//	go build -o ../../../bin/controller-gen sigs.k8s.io/controller-tools/cmd/controller-gen
package tools

import (
	_ "sigs.k8s.io/controller-tools/cmd/controller-gen"
)
