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

	capm3 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/baremetal"
	"github.com/capm3-preprov/capm3-preprov/test/framework/fixtures"
)

// pausedByCAPM3 is the pause CAPM3 puts on hosts it manages.
const pausedByCAPM3 = "metal3.io/capm3"

// ConflictingTemplatesSpec: a host selected by two templates, of either
// kind, is left paused and untouched, with a Warning event naming both;
// narrowing a selector is enough for it to be set up.
func ConflictingTemplatesSpec(ctx context.Context, inputGetter func() SpecInput) {
	var (
		input     SpecInput
		namespace string
	)
	BeforeEach(func() {
		input = inputGetter()
		Expect(input.Cluster).NotTo(BeNil())
		namespace = input.Cluster.createNamespace(ctx, "conflict")
	})

	It("leaves a host that two templates select untouched and names both templates", func() {
		c := input.Cluster
		By("Creating two Metal3PreprovisioningTemplates and two Metal3MachineTemplates with overlapping selectors")
		c.create(ctx,
			fixtures.PreprovisioningTemplate(namespace, "rack-r1", map[string]string{"rack": "r1"}, fixtures.StaticNetworkData()),
			fixtures.PreprovisioningTemplate(namespace, "site-a", map[string]string{"site": "a"}, fixtures.StaticNetworkData()),
		)
		c.create(ctx, machineTemplate(namespace, "workers", map[string]string{"role": "worker"}, fixtures.StaticNetworkData())...)
		// Machine templates that would render the same data for a host do
		// not conflict (a rollout that keeps the data template): these two
		// differ, and no MachineDeployment says which one governs.
		jumbo := fixtures.StaticNetworkData()
		jumbo.Links.Ethernets[0].MTU = 9000
		c.create(ctx, machineTemplate(namespace, "storage", map[string]string{"tier": "storage"}, jumbo)...)

		conflicts := map[string]struct {
			labels    map[string]string
			templates []string
		}{
			"both-kinds": {map[string]string{"rack": "r1", "role": "worker"},
				[]string{"Metal3PreprovisioningTemplate/rack-r1", "Metal3MachineTemplate/workers"}},
			"two-preprovisioning-templates": {map[string]string{"rack": "r1", "site": "a"},
				[]string{"Metal3PreprovisioningTemplate/rack-r1", "Metal3PreprovisioningTemplate/site-a"}},
			"two-machine-templates": {map[string]string{"role": "worker", "tier": "storage"},
				[]string{"Metal3MachineTemplate/workers", "Metal3MachineTemplate/storage"}},
		}
		By("Registering hosts each selected by two templates, and one selected by one")
		index := 0
		for name, conflict := range conflicts {
			c.create(ctx, newHost(namespace, name, index, conflict.labels).objects()...)
			index++
		}
		c.create(ctx, newHost(namespace, "single", index, map[string]string{"site": "a"}).objects()...)

		By("Waiting for the conflict events and the other host to be set up")
		Eventually(func(g Gomega) {
			c.expectHostsSetUp(ctx, g, namespace, []string{"single"}, nil)
			for name, conflict := range conflicts {
				c.expectEvent(ctx, g, namespace, name, corev1.EventTypeWarning, baremetal.ReasonTemplateConflict, conflict.templates...)
			}
		}).Should(Succeed())
		for name := range conflicts {
			c.expectUntouched(ctx, Default, namespace, name, preprovv1.PausedForPreprovisioning)
		}

		By("Narrowing a selector: the host it no longer selects is set up")
		template := &preprovv1.Metal3PreprovisioningTemplate{}
		Expect(c.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "site-a"}, template)).To(Succeed())
		original := template.DeepCopy()
		template.Spec.HostSelector.MatchExpressions = []capm3.HostSelectorRequirement{{Key: "rack", Operator: "notin", Values: []string{"r1"}}}
		Expect(c.Client.Patch(ctx, template, client.MergeFrom(original))).To(Succeed())
		Eventually(func(g Gomega) {
			c.expectHostsSetUp(ctx, g, namespace, []string{"two-preprovisioning-templates"}, nil)
		}).Should(Succeed())
	})
}

// PausedBySomeoneElseSpec: a host paused by CAPM3 (or clusterctl move, or
// a user) is never touched, even when a template selects it.
func PausedBySomeoneElseSpec(ctx context.Context, inputGetter func() SpecInput) {
	var (
		input     SpecInput
		namespace string
	)
	BeforeEach(func() {
		input = inputGetter()
		Expect(input.Cluster).NotTo(BeNil())
		namespace = input.Cluster.createNamespace(ctx, "paused-by-other")
	})

	It("leaves a host paused by CAPM3 untouched", func() {
		c := input.Cluster
		c.createWorkerTemplate(ctx, namespace, 241)
		By("Registering a host paused by CAPM3 next to one paused for preprovisioning, both selected")
		capm3Paused := newHost(namespace, "capm3-paused", 0, workers)
		capm3Paused.Host.Annotations[preprovv1.PausedAnnotation] = pausedByCAPM3
		c.create(ctx, capm3Paused.objects()...)
		c.create(ctx, newHost(namespace, "ours", 1, workers).objects()...)

		By("Waiting for our host to be set up: the manager has been through the namespace")
		Eventually(func(g Gomega) { c.expectHostsSetUp(ctx, g, namespace, []string{"ours"}, bothPools) }).Should(Succeed())

		By("Checking, for a few more reconciles, that the host paused by CAPM3 stays as it was")
		Consistently(func(g Gomega) { c.expectUntouched(ctx, g, namespace, "capm3-paused", pausedByCAPM3) }).Should(Succeed())
	})
}

// TemplateDay2Spec: changing a host's network data re-renders the Secrets
// of its hosts in place (same Secret, same claims, same addresses): an edit
// of a Metal3PreprovisioningTemplate, or a CAPI rollout of a new
// Metal3DataTemplate and Metal3MachineTemplate, since CAPM3 refuses edits of
// a Metal3DataTemplate's networkData.
func TemplateDay2Spec(ctx context.Context, inputGetter func() SpecInput) {
	var (
		input     SpecInput
		namespace string
	)
	BeforeEach(func() {
		input = inputGetter()
		Expect(input.Cluster).NotTo(BeNil())
		namespace = input.Cluster.createNamespace(ctx, "day2")
	})

	It("re-renders the network data in place when a template changes", func() {
		c := input.Cluster
		racked := map[string]string{"rack": "r1"}
		c.create(ctx, fixtures.TwoPools(namespace, 241)...)
		c.create(ctx, fixtures.PreprovisioningTemplate(namespace, "rack-r1", racked, fixtures.TwoPoolNetworkData()))
		c.create(ctx, machineTemplate(namespace, "workers", workers, fixtures.TwoPoolNetworkData())...)
		c.create(ctx, fixtures.MachineDeployment(namespace, "workers", "workers"))
		c.create(ctx, newHost(namespace, "racked", 0, racked).objects()...)
		c.create(ctx, newHost(namespace, "worker", 1, workers).objects()...)
		hosts := []string{"racked", "worker"}
		Eventually(func(g Gomega) { c.expectHostsSetUp(ctx, g, namespace, hosts, bothPools) }).Should(Succeed())
		secretUIDs, addresses := map[string]any{}, map[string]hostAddresses{}
		for _, host := range hosts {
			secretUIDs[host] = c.networkDataSecret(ctx, Default, namespace, host).UID
			addresses[host] = c.addressesOf(ctx, Default, namespace, host)
		}

		By("Raising the provisioning MTU in the Metal3PreprovisioningTemplate")
		template := &preprovv1.Metal3PreprovisioningTemplate{}
		Expect(c.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "rack-r1"}, template)).To(Succeed())
		original := template.DeepCopy()
		template.Spec.NetworkData.Links.Ethernets[0].MTU = 9000
		Expect(c.Client.Patch(ctx, template, client.MergeFrom(original))).To(Succeed())

		By("Checking that CAPM3's rule holds: a Metal3DataTemplate's networkData cannot be edited")
		dataTemplate := &capm3.Metal3DataTemplate{}
		Expect(c.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "workers"}, dataTemplate)).To(Succeed())
		originalData := dataTemplate.DeepCopy()
		dataTemplate.Spec.NetworkData.Links.Ethernets[0].MTU = 9000
		Expect(c.Client.Patch(ctx, dataTemplate, client.MergeFrom(originalData))).To(MatchError(ContainSubstring("cannot be modified")))

		By("Rolling the MTU out as CAPI does: a new Metal3DataTemplate and Metal3MachineTemplate, the MachineDeployment pointed at them")
		jumbo := fixtures.TwoPoolNetworkData()
		jumbo.Links.Ethernets[0].MTU = 9000
		c.create(ctx, machineTemplate(namespace, "workers-jumbo", workers, jumbo)...)
		deployment := &clusterv1.MachineDeployment{}
		Expect(c.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "workers"}, deployment)).To(Succeed())
		originalDeployment := deployment.DeepCopy()
		deployment.Spec.Template.Spec.InfrastructureRef.Name = "workers-jumbo"
		Expect(c.Client.Patch(ctx, deployment, client.MergeFrom(originalDeployment))).To(Succeed())

		By("Waiting for both Secrets to be re-rendered, in place, with the same addresses")
		Eventually(func(g Gomega) {
			for _, host := range hosts {
				links := c.networkData(ctx, g, namespace, host)["links"]
				g.Expect(links).To(ContainElement(SatisfyAll(HaveKeyWithValue("id", "enp1s0"), HaveKeyWithValue("mtu", BeNumerically("==", 9000)))))
			}
		}).Should(Succeed())
		for _, host := range hosts {
			Expect(c.networkDataSecret(ctx, Default, namespace, host).UID).To(Equal(secretUIDs[host]), "Secret of %s was recreated", host)
			Expect(c.addressesOf(ctx, Default, namespace, host)).To(Equal(addresses[host]), "addresses of %s changed", host)
		}
		c.expectHostsSetUp(ctx, Default, namespace, hosts, bothPools)
		By("Checking that the old Metal3MachineTemplate, kept for the old MachineSet, is a left-over, not a conflict")
		Eventually(func(g Gomega) {
			c.expectEvent(ctx, g, namespace, "worker", corev1.EventTypeNormal, baremetal.ReasonLeftOverTemplates,
				"Metal3MachineTemplate/workers-jumbo governs", "MachineDeployment/workers", "Metal3MachineTemplate/workers")
		}).Should(Succeed())
		Expect(c.hostEvents(ctx, Default, namespace, "worker")).NotTo(ContainElement(
			HaveField("Reason", baremetal.ReasonTemplateConflict)), "the rollout was reported as a conflict")
	})
}

// TemplateDeletionSpec: deleting the template of hosts orphans them: they
// keep their Secret and claims and are not paused again.
func TemplateDeletionSpec(ctx context.Context, inputGetter func() SpecInput) {
	var (
		input     SpecInput
		namespace string
	)
	BeforeEach(func() {
		input = inputGetter()
		Expect(input.Cluster).NotTo(BeNil())
		namespace = input.Cluster.createNamespace(ctx, "template-deleted")
	})

	It("leaves hosts their network data, claims and state when their template is deleted", func() {
		c := input.Cluster
		racked := map[string]string{"rack": "r1"}
		hosts := hostNames("node", 2)
		c.create(ctx, fixtures.TwoPools(namespace, 241)...)
		template := fixtures.PreprovisioningTemplate(namespace, "rack-r1", racked, fixtures.TwoPoolNetworkData())
		c.create(ctx, template)
		c.create(ctx, newHosts(namespace, hosts, 0, racked)...)
		Eventually(func(g Gomega) { c.expectHostsSetUp(ctx, g, namespace, hosts, bothPools) }).Should(Succeed())
		secrets, addresses := map[string]*corev1.Secret{}, map[string]hostAddresses{}
		for _, host := range hosts {
			secrets[host] = c.networkDataSecret(ctx, Default, namespace, host)
			addresses[host] = c.addressesOf(ctx, Default, namespace, host)
		}

		By("Deleting the template")
		Expect(c.Client.Delete(ctx, template)).To(Succeed())

		By("Waiting for the hosts to be reported as orphaned")
		Eventually(func(g Gomega) {
			for _, host := range hosts {
				c.expectEvent(ctx, g, namespace, host, corev1.EventTypeNormal, baremetal.ReasonOrphaned, "Metal3PreprovisioningTemplate/rack-r1")
			}
		}).Should(Succeed())

		By("Checking that they keep their Secret, claims and addresses and are not paused again")
		c.expectHostsSetUp(ctx, Default, namespace, hosts, bothPools)
		for _, host := range hosts {
			secret := c.networkDataSecret(ctx, Default, namespace, host)
			Expect(secret.UID).To(Equal(secrets[host].UID), "Secret of %s was recreated", host)
			Expect(secret.Data).To(Equal(secrets[host].Data), "network data of %s changed", host)
			Expect(c.addressesOf(ctx, Default, namespace, host)).To(Equal(addresses[host]))
		}
	})
}
