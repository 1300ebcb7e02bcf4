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
	"context"

	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capm3-preprov/capm3-preprov/test/framework/fixtures"
)

// StaticNetworkDataSpec: a rack whose ramdisk needs no address from a pool
// (IPv6 SLAAC) gets its network data without any claim.
func StaticNetworkDataSpec(ctx context.Context, inputGetter func() SpecInput) {
	var (
		input     SpecInput
		namespace string
	)
	BeforeEach(func() {
		input = inputGetter()
		Expect(input.Cluster).NotTo(BeNil())
		namespace = input.Cluster.createNamespace(ctx, "static")
	})

	It("sets a host up with network data that uses no pool", func() {
		c := input.Cluster
		rack := map[string]string{"rack": "r1"}
		By("Registering a host selected by a Metal3PreprovisioningTemplate with static network data")
		c.create(ctx, fixtures.PreprovisioningTemplate(namespace, "rack-r1", rack, fixtures.StaticNetworkData()))
		c.create(ctx, newHost(namespace, "node-0", 0, rack).objects()...)

		By("Waiting for the host to be unpaused with its Secret")
		Eventually(func(g Gomega) { c.expectHostsSetUp(ctx, g, namespace, []string{"node-0"}, nil) }).Should(Succeed())

		By("Checking the rendered network data and that no IPClaim was made")
		document := c.networkData(ctx, Default, namespace, "node-0")
		Expect(document["links"]).To(ConsistOf(HaveKeyWithValue("ethernet_mac_address", fixtures.MAC(namespace, 1, 0))))
		Expect(document["networks"]).To(ConsistOf(HaveKeyWithValue("type", "ipv6_slaac")))
		Expect(document["services"]).To(ConsistOf(HaveKeyWithValue("address", "2001:db8::53")))
		claims := &ipamv1.IPClaimList{}
		Expect(c.Client.List(ctx, claims, client.InNamespace(namespace))).To(Succeed())
		Expect(claims.Items).To(BeEmpty())
	})
}

// IPAMNetworkDataSpec: several hosts of a Metal3MachineTemplate whose
// network data takes addresses from two pools each get their own addresses,
// claimed as <host>-<pool>, owned by the host, and rendered.
func IPAMNetworkDataSpec(ctx context.Context, inputGetter func() SpecInput) {
	var (
		input     SpecInput
		namespace string
	)
	BeforeEach(func() {
		input = inputGetter()
		Expect(input.Cluster).NotTo(BeNil())
		namespace = input.Cluster.createNamespace(ctx, "ipam")
	})

	It("claims distinct addresses from two pools for every host", func() {
		c := input.Cluster
		hosts := hostNames("worker", 4)
		By("Registering four hosts selected by an opted-in Metal3MachineTemplate with two pools")
		c.createWorkerTemplate(ctx, namespace, 241)
		c.create(ctx, newHosts(namespace, hosts, 0, workers)...)

		By("Waiting for every host to hold one claim per pool, one Secret, and distinct addresses")
		Eventually(func(g Gomega) { c.expectHostsSetUp(ctx, g, namespace, hosts, bothPools) }).Should(Succeed())

		By("Checking the links of the rendered network data")
		for i, host := range hosts {
			document := c.networkData(ctx, Default, namespace, host)
			Expect(document["links"]).To(ConsistOf(
				HaveKeyWithValue("ethernet_mac_address", fixtures.MAC(namespace, 1, i)),
				HaveKeyWithValue("ethernet_mac_address", fixtures.MAC(namespace, 2, i)),
			))
		}
	})
}
