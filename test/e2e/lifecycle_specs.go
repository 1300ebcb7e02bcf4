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

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	capm3 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capm3-preprov/capm3-preprov/ipam"
	"github.com/capm3-preprov/capm3-preprov/test/framework"
)

// HostDeletionSpec: a host deleted by its user takes its claims, their
// IPAddresses and its Secret with it.
func HostDeletionSpec(ctx context.Context, inputGetter func() SpecInput) {
	var (
		input     SpecInput
		namespace string
	)
	BeforeEach(func() {
		input = inputGetter()
		Expect(input.Cluster).NotTo(BeNil())
		namespace = input.Cluster.createNamespace(ctx, "host-deleted")
	})

	It("releases the claims, addresses and Secret of a deleted host", func() {
		c := input.Cluster
		c.createWorkerTemplate(ctx, namespace, 241)
		c.create(ctx, newHosts(namespace, []string{"gone", "kept"}, 0, workers)...)
		Eventually(func(g Gomega) { c.expectHostsSetUp(ctx, g, namespace, []string{"gone", "kept"}, bothPools) }).Should(Succeed())

		By("Deleting one host")
		Expect(c.Client.Delete(ctx, c.getHost(ctx, Default, namespace, "gone"))).To(Succeed())

		By("Waiting until nothing of it remains, while the other host keeps everything")
		Eventually(func(g Gomega) {
			c.expectNothingLeftOf(ctx, g, namespace, []string{"gone"})
			c.expectHostsSetUp(ctx, g, namespace, []string{"kept"}, bothPools)
		}).Should(Succeed())
	})
}

// CAPM3HandoffSpec: when CAPM3 provisions a host we set up, our claims get
// its Metal3Data as an owner, which is what CAPM3 waits for to render the
// same addresses; deprovisioning and provisioning again keep them.
func CAPM3HandoffSpec(ctx context.Context, inputGetter func() SpecInput) {
	var (
		input     SpecInput
		namespace string
	)
	BeforeEach(func() {
		input = inputGetter()
		Expect(input.Cluster).NotTo(BeNil())
		namespace = input.Cluster.createNamespace(ctx, "handoff")
	})

	It("hands the claims over to CAPM3's Metal3Data and keeps the addresses through re-provisioning", func() {
		c := input.Cluster
		c.createWorkerTemplate(ctx, namespace, 241)
		c.create(ctx, newHost(namespace, "node-0", 0, workers).objects()...)
		Eventually(func(g Gomega) { c.expectHostsSetUp(ctx, g, namespace, []string{"node-0"}, bothPools) }).Should(Succeed())
		before := c.addressesOf(ctx, Default, namespace, "node-0")

		By("Provisioning the host as CAPM3 does: Metal3Machine, consumerRef, Metal3DataClaim, Metal3Data")
		data := c.provisionAsCAPM3(ctx, namespace, "node-0", "workers-abcde", "workers-0")
		Eventually(func(g Gomega) { g.Expect(c.claimDataOwners(ctx, g, namespace, "node-0")).To(ConsistOf(data.UID)) }).Should(Succeed())
		Expect(c.addressesOf(ctx, Default, namespace, "node-0")).To(Equal(before))

		By("Deprovisioning: the Metal3Data goes, the claims and addresses stay")
		c.deprovisionAsCAPM3(ctx, namespace, "node-0", data)
		Eventually(func(g Gomega) { g.Expect(c.claimDataOwners(ctx, g, namespace, "node-0")).To(BeEmpty()) }).Should(Succeed())
		Expect(c.addressesOf(ctx, Default, namespace, "node-0")).To(Equal(before))

		By("Provisioning again: a Metal3Data of the same name and a new UID becomes the owner")
		again := c.provisionAsCAPM3(ctx, namespace, "node-0", "workers-abcde", "workers-0")
		Expect(again.UID).NotTo(Equal(data.UID))
		Eventually(func(g Gomega) { g.Expect(c.claimDataOwners(ctx, g, namespace, "node-0")).To(ConsistOf(again.UID)) }).Should(Succeed())
		Expect(c.addressesOf(ctx, Default, namespace, "node-0")).To(Equal(before))
	})
}

// provisionAsCAPM3 creates what CAPM3 creates when a Machine takes a host
// (framework.ProvisionAsCAPM3), with the workers' Metal3DataTemplate.
func (c *Cluster) provisionAsCAPM3(ctx context.Context, namespace, hostName, machineName, dataName string) *capm3.Metal3Data {
	GinkgoHelper()
	data, err := framework.ProvisionAsCAPM3(ctx, c.Client, namespace, hostName, machineName, dataName, "workers")
	Expect(err).NotTo(HaveOccurred())
	return data
}

// deprovisionAsCAPM3 deletes what CAPM3 deletes when the Machine goes: the
// Metal3Data, the Metal3DataClaim, the Metal3Machine and the consumerRef.
func (c *Cluster) deprovisionAsCAPM3(ctx context.Context, namespace, hostName string, data *capm3.Metal3Data) {
	GinkgoHelper()
	machineName := data.Spec.Claim.Name
	for _, obj := range []client.Object{
		data,
		&capm3.Metal3DataClaim{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: machineName}},
		&capm3.Metal3Machine{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: machineName}},
	} {
		Expect(c.Client.Delete(ctx, obj)).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(c.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj))
		}).Should(BeTrue(), "%T %s is not gone", obj, obj.GetName())
	}
	c.patchHost(ctx, namespace, hostName, func(host *bmov1alpha1.BareMetalHost) { host.Spec.ConsumerRef = nil })
}

// claimDataOwners are the UIDs of the Metal3Data owning the host's claims;
// every claim must have the same ones, as non-controller references.
func (c *Cluster) claimDataOwners(ctx context.Context, g Gomega, namespace, hostName string) []types.UID {
	var owners []types.UID
	for i, pool := range bothPools {
		claim := &ipamv1.IPClaim{}
		g.Expect(c.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: ipam.ClaimName(hostName, pool)}, claim)).To(Succeed())
		var claimOwners []types.UID
		for _, ref := range claim.OwnerReferences {
			g.Expect(ref.Controller).To(BeNil(), "owner %s of claim %s must not be a controller reference", ref.Kind, claim.Name)
			if ref.Kind == "Metal3Data" {
				g.Expect(ref.APIVersion).To(Equal(capm3.GroupVersion.String()))
				claimOwners = append(claimOwners, ref.UID)
			}
		}
		if i == 0 {
			owners = claimOwners
		}
		g.Expect(claimOwners).To(Equal(owners), "claims of host %s have different Metal3Data owners", hostName)
	}
	return owners
}
