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
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/baremetal"
	"github.com/capm3-preprov/capm3-preprov/ipam"
)

// KillAtEachStepSpec: the manager dies between any two steps of a host's
// flow. With it stopped, the suite leaves hosts in the state each step
// leaves behind; a new manager finishes every host without doing any step
// twice: one claim per pool, the addresses IPAM already gave, one Secret,
// written again only when stale. The audit log shows which writes the new
// manager sent, even those that change nothing (and so leave the
// resourceVersion alone).
func KillAtEachStepSpec(ctx context.Context, inputGetter func() SpecInput) {
	var (
		input     SpecInput
		namespace string
	)
	BeforeEach(func() {
		input = inputGetter()
		Expect(input.Cluster).NotTo(BeNil())
		requireLocal(input, "stops the manager and IPAM")
		namespace = input.Cluster.createNamespace(ctx, "kill-at-step")
	})

	It("finishes hosts left at every step, doing no step twice", func() {
		c, local := input.Cluster, input.Cluster.Local
		staged := c.stageHostsAtEachStep(ctx, namespace, 2)

		By("Starting IPAM and a new manager")
		restarted := time.Now()
		Expect(local.IPAM.Start()).To(Succeed())
		Expect(local.Manager.Start()).To(Succeed())

		By("Waiting for every host to be set up once")
		Eventually(func(g Gomega) { c.expectHostsSetUp(ctx, g, namespace, staged.all(), bothPools) }).Should(Succeed())

		By("Checking that hosts kept the claims and addresses they had")
		for name, before := range staged.addresses {
			Expect(c.addressesOf(ctx, Default, namespace, name)).To(Equal(before), "host %s", name)
		}

		By("Checking from the audit log that the new manager did no step a host had done")
		events, err := readAuditLog(local.AuditLog)
		Expect(err).NotTo(HaveOccurred())
		// A create refused because the object exists is a harmless retry
		// from a cache that lagged; only what the API server accepted is a step.
		written := writesByObject(selectEvents(events, byUser(managerUser), receivedAfter(restarted), inNamespace(namespace),
			writeRequests, auditEvent.succeeded))
		claimCreates := map[hostStep]int{stepRegistered: len(bothPools), stepFirstClaim: len(bothPools) - 1}
		for _, step := range allSteps {
			for _, name := range staged.hosts[step] {
				created := 0
				for _, pool := range bothPools {
					created += len(written["create ipclaims/"+ipam.ClaimName(name, pool)])
				}
				Expect(created).To(Equal(claimCreates[step]), "claims the new manager created for %s (left at step %s)", name, step)
				secret := "secrets/" + baremetal.NetworkDataSecretName(name)
				switch step {
				case stepSecretWritten:
					Expect(written["patch "+secret]).To(BeEmpty(), "the Secret of %s was written again", name)
				case stepStaleSecret:
					Expect(written["patch "+secret]).NotTo(BeEmpty(), "the stale Secret of %s was not rewritten", name)
				}
				if staged.secrets[name] != nil {
					Expect(written["create "+secret]).To(BeEmpty(), "the Secret of %s was created again", name)
				}
			}
		}
		for _, name := range staged.hosts[stepStaleSecret] {
			secret := c.networkDataSecret(ctx, Default, namespace, name)
			Expect(secret.UID).To(Equal(staged.secrets[name].UID), "Secret of %s was recreated", name)
			Expect(c.networkData(ctx, Default, namespace, name)["links"]).
				To(ContainElement(HaveKeyWithValue("mtu", BeNumerically("==", 1500))), "Secret of %s is still stale", name)
		}
	})
}

// writesByObject groups write requests by "verb resource/name".
func writesByObject(events []auditEvent) map[string][]auditEvent {
	grouped := map[string][]auditEvent{}
	for _, event := range events {
		key := event.Verb + " " + event.ObjectRef.Resource + "/" + event.ObjectRef.Name
		grouped[key] = append(grouped[key], event)
	}
	return grouped
}

// KillInFlightSpec: the manager is SIGKILLed again and again while many
// hosts are in flight, each time a new manager has taken them some steps
// further; every host ends up set up exactly once.
func KillInFlightSpec(ctx context.Context, inputGetter func() SpecInput) {
	const (
		hostCount = 40
		// kills is how many times the manager is killed.
		kills = 3
		// stepsBetweenKills: claims, Secrets and host patches the managers
		// make between two kills, of 4 per host.
		stepsBetweenKills = 30
	)
	var (
		input     SpecInput
		namespace string
	)
	BeforeEach(func() {
		input = inputGetter()
		Expect(input.Cluster).NotTo(BeNil())
		requireLocal(input, "kills the manager")
		namespace = input.Cluster.createNamespace(ctx, "kill-in-flight")
	})

	It("sets every host up once though the manager is killed while they are in flight", func() {
		c, local := input.Cluster, input.Cluster.Local
		hosts := hostNames("worker", hostCount)
		c.createWorkerTemplate(ctx, namespace, 241)
		c.create(ctx, newHosts(namespace, hosts, 0, workers)...)

		// steps counts the manager's steps so far: claims, Secrets, patched hosts.
		steps := func(g Gomega) int {
			state := c.readNamespace(ctx, g, namespace)
			done := len(state.claims)
			for _, secret := range state.secrets {
				if secret.Labels[preprovv1.ManagedLabel] == preprovv1.ManagedLabelValue {
					done++
				}
			}
			for _, host := range state.hosts {
				if host.Spec.PreprovisioningNetworkDataName != "" {
					done++
				}
			}
			return done
		}
		total := hostCount * (len(bothPools) + 2)
		killedAt := []int{}
		for len(killedAt) < kills {
			next := min(stepsBetweenKills*(len(killedAt)+1), total)
			By(fmt.Sprintf("Waiting for the managers to have made %d of %d steps, then killing the manager with SIGKILL", next, total))
			var done int
			Eventually(func(g Gomega) int { done = steps(g); return done }).WithPolling(10 * time.Millisecond).
				Should(BeNumerically(">=", next))
			if done == total {
				break
			}
			Expect(local.Manager.Kill()).To(Succeed())
			killedAt = append(killedAt, done)
			Expect(local.Manager.Start()).To(Succeed())
		}
		GinkgoWriter.Printf("the manager was killed after %v of %d steps\n", killedAt, total)
		Expect(len(killedAt)).To(BeNumerically(">=", 2), "the hosts were set up before the manager could be killed twice in flight")

		By("Waiting for every host to be set up once")
		Eventually(func(g Gomega) { c.expectHostsSetUp(ctx, g, namespace, hosts, bothPools) }).Should(Succeed())
	})
}
