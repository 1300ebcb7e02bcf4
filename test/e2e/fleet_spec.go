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
	"fmt"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	capm3 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/baremetal"
	"github.com/capm3-preprov/capm3-preprov/test/framework/fixtures"
)

// FleetSpecInput sizes the fleet.
type FleetSpecInput struct {
	SpecInput
	// Hosts is how many hosts are registered at once; one in every ten
	// has a problem of one of three kinds.
	Hosts int
}

// fleetRole is what a host of the fleet is for, which is its label.
type fleetRole string

const (
	// Good hosts, half selected by a Metal3PreprovisioningTemplate, half by a
	// Metal3MachineTemplate, each with its own pool.
	goodA fleetRole = "good-a"
	goodB fleetRole = "good-b"
	// Bad hosts: a template naming a pool that does not exist, a MAC
	// annotation that is not a MAC, a host selected by two templates.
	missingPool fleetRole = "missing-pool"
	badMAC      fleetRole = "bad-mac"
	conflicting fleetRole = "conflicting"
)

// FleetSpec: hundreds of hosts registered at once, a few of them bad. The
// good ones are set up; each bad one reports its own problem and stays
// paused, without holding the others up.
func FleetSpec(ctx context.Context, inputGetter func() FleetSpecInput) {
	var (
		input     FleetSpecInput
		namespace string
	)
	BeforeEach(func() {
		input = inputGetter()
		Expect(input.Cluster).NotTo(BeNil())
		Expect(input.Hosts).To(BeNumerically(">=", 20))
		namespace = input.Cluster.createNamespace(ctx, "fleet")
	})

	It("sets the good hosts up and reports each bad one", func() {
		c := input.Cluster
		By("Creating the templates and pools")
		badMACData := fixtures.StaticNetworkData()
		badMACData.Links.Ethernets[0].MACAddress = &capm3.NetworkLinkEthernetMac{
			FromAnnotation: capm3.NetworkLinkEthernetMacFromAnnotation{Object: "baremetalhost", Annotation: fixtures.StorageMACAnnotation},
		}
		c.create(ctx,
			fixtures.Pool(namespace, "fleet-a", "192.168.40.10", "192.168.40.250", "192.168.40.1"),
			fixtures.Pool(namespace, "fleet-b", "192.168.41.10", "192.168.41.250", "192.168.41.1"),
			fixtures.PreprovisioningTemplate(namespace, "rack-a", fleetLabels(goodA), fixtures.PoolNetworkData("fleet-a")),
			fixtures.PreprovisioningTemplate(namespace, "missing-pool", fleetLabels(missingPool), fixtures.PoolNetworkData("absent")),
			fixtures.PreprovisioningTemplate(namespace, "bad-mac", fleetLabels(badMAC), badMACData),
		)
		c.create(ctx, machineTemplate(namespace, "workers", fleetLabels(goodB), fixtures.PoolNetworkData("fleet-b"))...)
		c.create(ctx, machineTemplate(namespace, "conflicting", map[string]string{"conflict": "yes"}, fixtures.StaticNetworkData())...)

		By(fmt.Sprintf("Registering %d hosts at once, one in ten of them bad", input.Hosts))
		hosts := map[fleetRole][]string{}
		for i := range input.Hosts {
			role := fleetRoleOf(i)
			name := fmt.Sprintf("%s-%d", role, i)
			registered := newHost(namespace, name, i, fleetLabels(role))
			switch role {
			case badMAC:
				registered.Host.Annotations[fixtures.StorageMACAnnotation] = "not-a-mac"
			case conflicting:
				// Selected by rack-a and by the conflicting Metal3MachineTemplate.
				registered.Host.Labels = map[string]string{"fleet": string(goodA), "conflict": "yes"}
			}
			c.create(ctx, registered.objects()...)
			hosts[role] = append(hosts[role], name)
		}

		By("Waiting for the good hosts to be set up and each bad one to report its problem")
		Eventually(func(g Gomega) {
			c.expectHostsSetUp(ctx, g, namespace, hosts[goodA], []string{"fleet-a"})
			c.expectHostsSetUp(ctx, g, namespace, hosts[goodB], []string{"fleet-b"})
			events := c.events(ctx, g, namespace)
			for _, name := range hosts[missingPool] {
				expectEventIn(g, events, name, corev1.EventTypeWarning, baremetal.ReasonIPClaimFailed, `IPPool "absent" does not exist`)
			}
			for _, name := range hosts[badMAC] {
				expectEventIn(g, events, name, corev1.EventTypeWarning, baremetal.ReasonRenderFailed, fixtures.StorageMACAnnotation, "not a MAC address")
			}
			for _, name := range hosts[conflicting] {
				expectEventIn(g, events, name, corev1.EventTypeWarning, baremetal.ReasonTemplateConflict,
					"Metal3PreprovisioningTemplate/rack-a", "Metal3MachineTemplate/conflicting")
			}
		}).WithTimeout(c.Intervals.Fleet).Should(Succeed())

		By("Checking that every bad host stays paused, without network data")
		for _, role := range []fleetRole{missingPool, badMAC, conflicting} {
			for _, name := range hosts[role] {
				expectStillPaused(c.getHost(ctx, Default, namespace, name))
			}
		}
		Expect(c.ownSecretNames(ctx, namespace)).To(HaveLen(len(hosts[goodA]) + len(hosts[goodB])))
	})
}

// fleetRoleOf spreads the bad hosts through the fleet: of every ten hosts,
// one is bad, in turn of each kind, and the rest are good.
func fleetRoleOf(i int) fleetRole {
	switch {
	case i%30 == 9:
		return missingPool
	case i%30 == 19:
		return badMAC
	case i%30 == 29:
		return conflicting
	case i%2 == 0:
		return goodA
	default:
		return goodB
	}
}

func fleetLabels(role fleetRole) map[string]string {
	return map[string]string{"fleet": string(role)}
}

// expectStillPaused checks that a host is paused for us without network data.
func expectStillPaused(host *bmov1alpha1.BareMetalHost) {
	GinkgoHelper()
	Expect(host.Annotations).To(HaveKeyWithValue(preprovv1.PausedAnnotation, preprovv1.PausedForPreprovisioning), host.Name)
	Expect(host.Spec.PreprovisioningNetworkDataName).To(BeEmpty(), host.Name)
	Expect(host.Labels).NotTo(HaveKey(preprovv1.ManagedLabel), host.Name)
}

// ownSecretNames are the names of the Secrets of a namespace that carry our
// label.
func (c *Cluster) ownSecretNames(ctx context.Context, namespace string) []string {
	GinkgoHelper()
	secrets := &corev1.SecretList{}
	Expect(c.Client.List(ctx, secrets, client.InNamespace(namespace),
		client.MatchingLabels{preprovv1.ManagedLabel: preprovv1.ManagedLabelValue})).To(Succeed())
	names := make([]string, 0, len(secrets.Items))
	for _, secret := range secrets.Items {
		names = append(names, secret.Name)
	}
	return names
}
