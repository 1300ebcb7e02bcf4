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

	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/internal/ownership"
	"github.com/capm3-preprov/capm3-preprov/ipam"
)

// APIServerRestartSpec: kube-apiserver crashes and restarts while
// hosts are in flight and while the manager is still busy with what it does
// when it starts (checking the owners of every claim of ours, one request
// each, which takes a while in a large fleet). The manager rides it out
// without a restart of its own, and every host is set up exactly once.
// IPAM is stopped meanwhile so the hosts wait instead of retrying writes,
// which would leave the manager's start-up requests to chance.
//
// A crash kills every connection at once (a graceful stop would answer
// "retry after 1 s" for a while first, which hides some errors), and the API
// server stays down for apiServerDown, as a restarting Pod does: client-go
// retries a read cut off by a crash once, so a shorter outage hides errors
// too. The whole outage must stay shorter than the leader election's renew
// deadline (10 s): past it any controller-runtime manager gives up its
// lease and exits by design. Here it takes 3 to 6 s.
func APIServerRestartSpec(ctx context.Context, inputGetter func() SpecInput) {
	const (
		apiServerDown = 2 * time.Second
		// fleetHosts hosts of an earlier fleet hold fleetClaimsPerHost claims
		// each: the manager's start-up sweep checks every claim's owners.
		fleetHosts         = 100
		fleetClaimsPerHost = 3
	)
	var (
		input     SpecInput
		namespace string
	)
	BeforeEach(func() {
		input = inputGetter()
		Expect(input.Cluster).NotTo(BeNil())
		requireLocal(input, "restarts the local kube-apiserver")
		namespace = input.Cluster.createNamespace(ctx, "apiserver-restart")
	})

	It("sets every host up once while kube-apiserver restarts, and the manager keeps running", func() {
		c, local := input.Cluster, input.Cluster.Local
		hosts := hostNames("worker", 30)
		c.createWorkerTemplate(ctx, namespace, 241)

		By(fmt.Sprintf("Registering the claims of an earlier fleet: %d hosts with %d claims each", fleetHosts, fleetClaimsPerHost))
		c.registerFleetClaims(ctx, namespace, fleetHosts, fleetClaimsPerHost)

		By("Registering 30 hosts while IPAM is stopped: they stay in flight, their claims waiting for addresses")
		Expect(local.IPAM.Stop()).To(Succeed())
		c.create(ctx, newHosts(namespace, hosts, 0, workers)...)
		Eventually(func(g Gomega) int { return c.countClaims(ctx, g, namespace) }).
			Should(Equal(fleetHosts*fleetClaimsPerHost + len(hosts)*len(bothPools)))

		By("Restarting the manager, and waiting until it leads: its controllers and its start-up sweep of the fleet's claims start")
		started := time.Now()
		Expect(local.Manager.Stop()).To(Succeed())
		Expect(local.Manager.Start()).To(Succeed())
		pid := local.Manager.PID()
		Eventually(func(g Gomega) {
			events, err := readAuditLog(local.AuditLog)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(selectEvents(events, byUser(managerUser), receivedAfter(started),
				func(e auditEvent) bool { return e.on("leases") && e.isWrite() })).NotTo(BeEmpty())
		}).WithPolling(20 * time.Millisecond).Should(Succeed())

		By("Killing kube-apiserver with SIGKILL, and starting it again 2 s later on the same port, certificates and etcd")
		restarted := time.Now()
		before, after, err := local.ControlPlane.CrashAPIServer(apiServerDown)
		Expect(err).NotTo(HaveOccurred())
		Expect(after).To(Equal(before), "kube-apiserver came back on another port")
		GinkgoWriter.Printf("kube-apiserver was restarted in %s\n", time.Since(restarted))

		By("Starting IPAM again, and waiting for every host to be set up once, by the same manager process")
		Expect(local.IPAM.Start()).To(Succeed())
		Eventually(func(g Gomega) {
			if !local.Manager.Running() {
				StopTrying("the manager exited when kube-apiserver crashed; see " + local.Manager.LogPath).Now()
			}
			c.expectHostsSetUp(ctx, g, namespace, hosts, bothPools)
		}).Should(Succeed())
		Expect(local.Manager.PID()).To(Equal(pid))
	})
}

// registerFleetClaims creates hosts that no template selects, each holding
// claims of ours as a host set up long ago does. Their pool does not exist
// here, so IPAM leaves them alone; the manager only checks their owners.
func (c *Cluster) registerFleetClaims(ctx context.Context, namespace string, hosts, claimsPerHost int) {
	GinkgoHelper()
	for i := range hosts {
		name := fmt.Sprintf("fleet-%d", i)
		registered := newHost(namespace, name, 1000+i, map[string]string{"fleet": "earlier"})
		delete(registered.Host.Annotations, preprovv1.PausedAnnotation)
		c.create(ctx, registered.objects()...)
		host := c.getHost(ctx, Default, namespace, name)
		for n := range claimsPerHost {
			pool := fmt.Sprintf("earlier-%d", n)
			c.create(ctx, &ipamv1.IPClaim{
				ObjectMeta: metav1.ObjectMeta{
					Namespace:       namespace,
					Name:            ipam.ClaimName(name, pool),
					Labels:          map[string]string{preprovv1.ManagedLabel: preprovv1.ManagedLabelValue},
					OwnerReferences: []metav1.OwnerReference{ownership.HostOwnerReference(host)},
				},
				Spec: ipamv1.IPClaimSpec{Pool: corev1.ObjectReference{Namespace: namespace, Name: pool}},
			})
		}
	}
}
