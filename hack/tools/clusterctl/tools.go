//go:build tools

// Package tools pins sigs.k8s.io/cluster-api so that `go mod tidy` keeps the
// clusterctl command in this module.
package tools

import (
	_ "sigs.k8s.io/cluster-api/cmd/clusterctl"
)
