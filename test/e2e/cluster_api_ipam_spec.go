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
	"slices"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	capipamv1 "sigs.k8s.io/cluster-api/api/ipam/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/baremetal"
	"github.com/capm3-preprov/capm3-preprov/ipam"
	"github.com/capm3-preprov/capm3-preprov/test/framework/fixtures"
	inclusterv1alpha2 "github.com/capm3-preprov/capm3-preprov/test/standins/capiipamstandin/v1alpha2"
)

// ClusterAPIIPAMSpec: hosts take their addresses from a Cluster API IPAM
// pool (an InClusterIPPool; the provider is played by
// test/standins/capiipamstandin). The hosts the pool can serve are set up
// with one IPAddressClaim each, the one it cannot serve waits and says so,
// and when a set-up host is deleted its claim and address go and the waiting
// host gets the freed address.
func ClusterAPIIPAMSpec(ctx context.Context, inputGetter func() SpecInput) {
	var (
		input     SpecInput
		namespace string
	)
	BeforeEach(func() {
		input = inputGetter()
		Expect(input.Cluster).NotTo(BeNil())
		namespace = input.Cluster.createNamespace(ctx, "capi-ipam")
	})

	It("sets hosts up from an InClusterIPPool, reports the exhausted pool, and gives a deleted host's address to the waiting one", func() {
		c := input.Cluster
		const pool = "capi-rack"
		rack := map[string]string{"rack": "capi"}
		hosts := hostNames("capi", 4)
		By("Registering four hosts on an InClusterIPPool of three addresses")
		c.create(ctx,
			fixtures.InClusterIPPool(namespace, pool, "192.168.33.10-192.168.33.12", 24, "192.168.33.1"),
			fixtures.PreprovisioningTemplate(namespace, "capi-rack", rack, fixtures.ClusterAPIPoolNetworkData(pool)),
		)
		c.create(ctx, newHosts(namespace, hosts, 0, rack)...)

		By("Waiting for three hosts to be set up and the fourth to report the exhausted pool")
		var setUp []string
		var waiting string
		Eventually(func(g Gomega) {
			setUp, waiting = nil, ""
			state := c.readClusterAPIClaims(ctx, g, namespace)
			for _, name := range hosts {
				if c.getHost(ctx, g, namespace, name).Spec.PreprovisioningNetworkDataName != "" {
					setUp = append(setUp, name)
				} else {
					waiting = name
				}
			}
			g.Expect(setUp).To(HaveLen(3))
			c.expectSetUpFromClusterAPI(ctx, g, state, namespace, setUp, pool)
			c.expectWaitingOnExhaustedClusterAPIPool(ctx, g, state, namespace, waiting, pool)
		}).Should(Succeed())

		By("Deleting a set-up host")
		gone := setUp[0]
		freed := networkDataIPs(Default, c.networkDataSecret(ctx, Default, namespace, gone))
		Expect(c.Client.Delete(ctx, c.getHost(ctx, Default, namespace, gone))).To(Succeed())

		By("Waiting until nothing of it remains and the waiting host has its address")
		Eventually(func(g Gomega) {
			state := c.readClusterAPIClaims(ctx, g, namespace)
			for _, claim := range state.claims {
				g.Expect(claim.Name).NotTo(Equal(ipam.ClaimName(gone, pool)), "the claim of the deleted host remains")
			}
			for _, address := range state.addresses {
				g.Expect(address.Spec.ClaimRef.Name).NotTo(Equal(ipam.ClaimName(gone, pool)), "the IPAddress of the deleted host remains")
			}
			c.expectNothingLeftOf(ctx, g, namespace, []string{gone})
			remaining := append(slices.Clone(setUp[1:]), waiting)
			c.expectSetUpFromClusterAPI(ctx, g, state, namespace, remaining, pool)
			g.Expect(networkDataIPs(g, c.networkDataSecret(ctx, g, namespace, waiting))).To(Equal(freed))
		}).Should(Succeed())
	})
}

// clusterAPIClaims are the IPAddressClaims and IPAddresses of a namespace.
type clusterAPIClaims struct {
	claims    []capipamv1.IPAddressClaim
	addresses []capipamv1.IPAddress
}

func (c *Cluster) readClusterAPIClaims(ctx context.Context, g Gomega, namespace string) clusterAPIClaims {
	claims, addresses := &capipamv1.IPAddressClaimList{}, &capipamv1.IPAddressList{}
	g.Expect(c.Client.List(ctx, claims, client.InNamespace(namespace))).To(Succeed())
	g.Expect(c.Client.List(ctx, addresses, client.InNamespace(namespace))).To(Succeed())
	return clusterAPIClaims{claims: claims.Items, addresses: addresses.Items}
}

// expectSetUpFromClusterAPI checks that each host is set up with exactly one
// IPAddressClaim, on pool, owned by the host and labelled ours, whose
// IPAddress, allocated to it, holds the address of the host's Secret; and
// that no address is given twice.
func (c *Cluster) expectSetUpFromClusterAPI(ctx context.Context, g Gomega, state clusterAPIClaims, namespace string, hosts []string, pool string) {
	given := map[string]string{}
	for _, name := range hosts {
		host := c.getHost(ctx, g, namespace, name)
		g.Expect(host.Annotations).NotTo(HaveKeyWithValue(preprovv1.PausedAnnotation, preprovv1.PausedForPreprovisioning), "host %s", name)
		g.Expect(host.Spec.PreprovisioningNetworkDataName).To(Equal(baremetal.NetworkDataSecretName(name)), "host %s", name)
		claims := itemsOwnedBy(state.claims, host.UID)
		g.Expect(claims).To(HaveLen(1), "host %s must hold exactly one IPAddressClaim", name)
		claim := claims[0]
		g.Expect(claim.Name).To(Equal(ipam.ClaimName(name, pool)))
		g.Expect(claim.Labels).To(HaveKeyWithValue(preprovv1.ManagedLabel, preprovv1.ManagedLabelValue))
		g.Expect(claim.Spec.PoolRef).To(Equal(capipamv1.IPPoolReference{APIGroup: "ipam.cluster.x-k8s.io", Kind: "InClusterIPPool", Name: pool}))
		g.Expect(claim.Status.AddressRef.Name).NotTo(BeEmpty(), "claim %s has no address", claim.Name)
		var address *capipamv1.IPAddress
		for i := range state.addresses {
			if state.addresses[i].Name == claim.Status.AddressRef.Name {
				address = &state.addresses[i]
			}
		}
		g.Expect(address).NotTo(BeNil(), "IPAddress %s of claim %s", claim.Status.AddressRef.Name, claim.Name)
		g.Expect(address.Spec.ClaimRef.Name).To(Equal(claim.Name))
		g.Expect(networkDataIPs(g, c.networkDataSecret(ctx, g, namespace, name))).To(Equal([]string{address.Spec.Address}), "host %s", name)
		g.Expect(given).NotTo(HaveKey(address.Spec.Address), "address %s is given twice", address.Spec.Address)
		given[address.Spec.Address] = name
	}
}

// expectWaitingOnExhaustedClusterAPIPool checks that a host waits on an
// exhausted Cluster API pool: still paused for us with no Secret, its claim
// refused by the provider, and a Warning naming the pool and the reason.
func (c *Cluster) expectWaitingOnExhaustedClusterAPIPool(ctx context.Context, g Gomega, state clusterAPIClaims, namespace, name, pool string) {
	host := c.getHost(ctx, g, namespace, name)
	g.Expect(host.Annotations).To(HaveKeyWithValue(preprovv1.PausedAnnotation, preprovv1.PausedForPreprovisioning), "host %s", name)
	g.Expect(host.Spec.PreprovisioningNetworkDataName).To(BeEmpty(), "host %s", name)
	claims := itemsOwnedBy(state.claims, host.UID)
	g.Expect(claims).To(HaveLen(1), "host %s", name)
	g.Expect(claims[0].Status.AddressRef.Name).To(BeEmpty(), "claim of host %s", name)
	// The in-cluster provider says nothing on the claim; its pool counts
	// no free address.
	inClusterPool := &inclusterv1alpha2.InClusterIPPool{}
	g.Expect(c.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: pool}, inClusterPool)).To(Succeed())
	g.Expect(inClusterPool.Status.Addresses).To(HaveValue(HaveField("Free", 0)))
	c.expectEvent(ctx, g, namespace, name, corev1.EventTypeWarning, baremetal.ReasonIPClaimFailed,
		`InClusterIPPool "`+pool+`" has no free address`, "add addresses to the pool")
}
