//go:build e2e

package e2e

import (
	. "github.com/onsi/ginkgo/v2"
)

var _ = Describe("Security", func() {
	input := func() SpecInput { return SpecInput{Cluster: cluster} }

	Describe("The manager's RBAC", func() { ManagerRBACSpec(ctx, input) })
	Describe("What the manager does, from the audit log", Ordered, func() { ManagerAuditSpec(ctx, input) })
	Describe("The namespace-scoped install", func() { NamespacedInstallSpec(ctx, input) })
})
