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

var _ = Describe("User stories", func() {
	input := func() SpecInput { return SpecInput{Cluster: cluster} }

	Describe("Static network data", func() { StaticNetworkDataSpec(ctx, input) })
	Describe("Network data from IPAM", func() { IPAMNetworkDataSpec(ctx, input) })
	Describe("Network data from a Cluster API IPAM pool", func() { ClusterAPIIPAMSpec(ctx, input) })
	Describe("Conflicting templates", func() { ConflictingTemplatesSpec(ctx, input) })
	Describe("A host paused by someone else", func() { PausedBySomeoneElseSpec(ctx, input) })
	Describe("A template edited on day 2", func() { TemplateDay2Spec(ctx, input) })
	Describe("A template deleted", func() { TemplateDeletionSpec(ctx, input) })
	Describe("A host deleted", func() { HostDeletionSpec(ctx, input) })
	Describe("The handoff to CAPM3", func() { CAPM3HandoffSpec(ctx, input) })
	Describe("The admission webhooks", func() { WebhookSpec(ctx, input) })
	Describe("A host boots its ramdisk without DHCP", func() { RamdiskBootSpec(ctx, input) })
})
