//go:build e2e

/*
Copyright The capm3-preprov Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package e2e

import (
	. "github.com/onsi/ginkgo/v2"
)

var _ = Describe("Faults", func() {
	input := func() SpecInput { return SpecInput{Cluster: cluster} }

	Describe("The manager is killed at each step of a host", func() { KillAtEachStepSpec(ctx, input) })
	Describe("The manager is killed while hosts are in flight", func() { KillInFlightSpec(ctx, input) })
	Describe("kube-apiserver restarts while hosts are in flight", func() { APIServerRestartSpec(ctx, input) })
	Describe("A host is deleted at each step", func() { HostDeletionAtEachStepSpec(ctx, input) })
	Describe("A pool is exhausted", func() { PoolExhaustionSpec(ctx, input) })
	Describe("Two managers with leader election", func() { LeaderElectionSpec(ctx, input) })
	Describe("A fleet with bad hosts mixed in", func() {
		FleetSpec(ctx, func() FleetSpecInput { return FleetSpecInput{SpecInput: input(), Hosts: 200} })
	})
})
