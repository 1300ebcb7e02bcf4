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

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/baremetal"
	"github.com/capm3-preprov/capm3-preprov/test/framework/fixtures"
)

// PoolExhaustionSpec: a pool runs out of addresses. The hosts it cannot
// serve say so and stay paused, the others are set up, and once the pool
// grows the waiting hosts are set up too.
func PoolExhaustionSpec(ctx context.Context, inputGetter func() SpecInput) {
	var (
		input     SpecInput
		namespace string
	)
	BeforeEach(func() {
		input = inputGetter()
		Expect(input.Cluster).NotTo(BeNil())
		namespace = input.Cluster.createNamespace(ctx, "exhausted")
	})

	It("reports the hosts an exhausted pool cannot serve, and sets them up once it grows", func() {
		c := input.Cluster
		small, big := map[string]string{"rack": "small"}, map[string]string{"rack": "big"}
		smallHosts, bigHosts := hostNames("small", 5), hostNames("big", 3)
		By("Registering five hosts on a pool of three addresses, and three on a roomy pool")
		c.create(ctx,
			fixtures.Pool(namespace, "tiny", "192.168.30.10", "192.168.30.12", "192.168.30.1"),
			fixtures.Pool(namespace, "roomy", "192.168.31.10", "192.168.31.250", "192.168.31.1"),
			fixtures.PreprovisioningTemplate(namespace, "small-rack", small, fixtures.PoolNetworkData("tiny")),
			fixtures.PreprovisioningTemplate(namespace, "big-rack", big, fixtures.PoolNetworkData("roomy")),
		)
		c.create(ctx, newHosts(namespace, smallHosts, 0, small)...)
		c.create(ctx, newHosts(namespace, bigHosts, len(smallHosts), big)...)

		By("Waiting for three small hosts and every big one to be set up, and the other two to report the exhausted pool")
		Eventually(func(g Gomega) {
			c.expectHostsSetUp(ctx, g, namespace, bigHosts, []string{"roomy"})
			state := c.readNamespace(ctx, g, namespace)
			var setUp []string
			for _, name := range smallHosts {
				if state.hosts[name].Spec.PreprovisioningNetworkDataName != "" {
					setUp = append(setUp, name)
					continue
				}
				c.expectExhausted(ctx, g, state, name)
			}
			g.Expect(setUp).To(HaveLen(3))
			c.expectHostsSetUp(ctx, g, namespace, setUp, []string{"tiny"})
		}).Should(Succeed())

		By("Growing the pool")
		c.growPool(ctx, namespace, "tiny", "192.168.30.20")

		By("Waiting for every small host to be set up")
		Eventually(func(g Gomega) { c.expectHostsSetUp(ctx, g, namespace, smallHosts, []string{"tiny"}) }).Should(Succeed())
	})
}

// expectExhausted checks that a host waits on an exhausted pool: still
// paused for us with no Secret, its claim failed, and a Warning event says so.
func (c *Cluster) expectExhausted(ctx context.Context, g Gomega, state namespaceState, name string) {
	host := state.hosts[name]
	g.Expect(host.Annotations).To(HaveKeyWithValue(preprovv1.PausedAnnotation, preprovv1.PausedForPreprovisioning), "host %s", name)
	g.Expect(itemsOwnedBy(state.secrets, host.UID)).To(BeEmpty(), "host %s", name)
	claims := itemsOwnedBy(state.claims, host.UID)
	g.Expect(claims).To(HaveLen(1), "host %s", name)
	g.Expect(claims[0].Status.ErrorMessage).To(HaveValue(Equal(exhaustedMessage)), "claim of host %s", name)
	c.expectEvent(ctx, g, host.Namespace, name, corev1.EventTypeWarning, baremetal.ReasonIPClaimFailed, exhaustedMessage)
}

// exhaustedMessage is Metal3 IPAM's status.errorMessage for a pool with no
// free address (the stand-in uses the same).
const exhaustedMessage = "Exhausted IP Pools"
