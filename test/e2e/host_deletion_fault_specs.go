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
	"strings"
	"sync"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
)

// deletionPoint is when a host is deleted while the manager works on it.
type deletionPoint string

const (
	// beforeClaim: right after the host is created.
	beforeClaim deletionPoint = "before-claim"
	// afterClaim: as soon as its first claim exists.
	afterClaim deletionPoint = "after-claim"
	// afterAddress: as soon as its first IPAddress exists.
	afterAddress deletionPoint = "after-address"
	// afterSecret: as soon as its Secret exists.
	afterSecret deletionPoint = "after-secret"
)

var deletionPoints = []deletionPoint{beforeClaim, afterClaim, afterAddress, afterSecret}

// HostDeletionAtEachStepSpec: a host deleted at any step of its flow leaves
// no claim, IPAddress or Secret behind, whether the manager is down or
// working on it (owner references and the garbage collector do the work).
func HostDeletionAtEachStepSpec(ctx context.Context, inputGetter func() SpecInput) {
	var (
		input     SpecInput
		namespace string
	)
	BeforeEach(func() {
		input = inputGetter()
		Expect(input.Cluster).NotTo(BeNil())
		namespace = input.Cluster.createNamespace(ctx, "delete-at-step")
	})

	It("releases everything of hosts deleted at each step while no manager runs", func() {
		requireLocal(input, "stops the manager and IPAM")
		c, local := input.Cluster, input.Cluster.Local
		staged := c.stageHostsAtEachStep(ctx, namespace, 2)

		By("Deleting every host at the step it was left at")
		for _, name := range staged.all() {
			Expect(c.Client.Delete(ctx, c.getHost(ctx, Default, namespace, name))).To(Succeed())
		}
		By("Starting IPAM and the manager again")
		Expect(local.IPAM.Start()).To(Succeed())
		Expect(local.Manager.Start()).To(Succeed())

		By("Waiting until no claim, IPAddress or Secret of the deleted hosts remains")
		Eventually(func(g Gomega) { c.expectNothingLeftOf(ctx, g, namespace, staged.all()) }).Should(Succeed())
	})

	It("releases everything of hosts deleted at each step while the manager works on them", func() {
		c := input.Cluster
		doomed := map[string]deletionPoint{}
		var doomedNames []string
		for _, point := range deletionPoints {
			for _, name := range hostNames(string(point), 3) {
				doomed[name] = point
				doomedNames = append(doomedNames, name)
			}
		}
		survivors := hostNames("survivor", 3)
		// Pools with exactly one address per host: the hosts registered
		// after the deletions can only be set up if every address of the
		// deleted hosts was released.
		size := len(doomedNames) + len(survivors)
		c.createWorkerTemplate(ctx, namespace, size)

		By("Watching claims, IPAddresses and Secrets to delete each host at its point")
		deleter := c.deleteHostsAt(ctx, namespace, doomed)
		DeferCleanup(deleter.stop)

		By("Registering the hosts; those to delete before their claim are deleted at once")
		for i, name := range append(doomedNames, survivors...) {
			c.create(ctx, newHost(namespace, name, i, workers).objects()...)
			if doomed[name] == beforeClaim {
				deleter.delete(name)
			}
		}

		By("Waiting until every doomed host is deleted and nothing of it remains, and the others are set up")
		Eventually(deleter.deleted).Should(ConsistOf(doomedNames))
		Expect(deleter.errors()).To(BeEmpty())
		// IPAM leaves behind the IPAddress of a claim deleted while it
		// allocates it (design 11); the manager releases such addresses,
		// so none may remain here either.
		Eventually(func(g Gomega) {
			c.expectNothingLeftOf(ctx, g, namespace, doomedNames)
			c.expectHostsSetUp(ctx, g, namespace, survivors, bothPools)
		}).Should(Succeed())

		By("Checking that nothing of them comes back while the manager keeps running")
		Consistently(func(g Gomega) { c.expectNothingLeftOf(ctx, g, namespace, doomedNames) }).Should(Succeed())

		By("Registering as many new hosts as were deleted: each gets an address the deleted hosts had")
		newcomers := hostNames("next", len(doomedNames))
		c.create(ctx, newHosts(namespace, newcomers, size, workers)...)
		Eventually(func(g Gomega) { c.expectHostsSetUp(ctx, g, namespace, newcomers, bothPools) }).Should(Succeed())
	})
}

// hostDeleter deletes hosts when their claims, addresses or Secrets appear,
// as the watch events reach it.
type hostDeleter struct {
	cluster   *Cluster
	namespace string
	points    map[string]deletionPoint
	cancel    context.CancelFunc
	done      chan struct{}

	mu        sync.Mutex
	deletedAt map[string]bool
	errs      []error
}

func (c *Cluster) deleteHostsAt(ctx context.Context, namespace string, points map[string]deletionPoint) *hostDeleter {
	GinkgoHelper()
	watchCtx, cancel := context.WithCancel(ctx)
	d := &hostDeleter{cluster: c, namespace: namespace, points: points, cancel: cancel, done: make(chan struct{}), deletedAt: map[string]bool{}}
	type pointEvent struct {
		watch.Event
		point deletionPoint
	}
	events := make(chan pointEvent)
	var forwarders sync.WaitGroup
	for point, list := range map[deletionPoint]client.ObjectList{
		afterClaim: &ipamv1.IPClaimList{}, afterAddress: &ipamv1.IPAddressList{}, afterSecret: &corev1.SecretList{},
	} {
		w, err := c.Client.Watch(watchCtx, list, client.InNamespace(namespace))
		Expect(err).NotTo(HaveOccurred())
		forwarders.Go(func() {
			defer w.Stop()
			for event := range w.ResultChan() {
				select {
				case events <- pointEvent{event, point}:
				case <-watchCtx.Done():
					return
				}
			}
		})
	}
	go func() {
		defer close(d.done)
		for {
			select {
			case <-watchCtx.Done():
				forwarders.Wait()
				return
			case event := <-events:
				d.onEvent(event.Event, event.point)
			}
		}
	}()
	return d
}

func (d *hostDeleter) onEvent(event watch.Event, point deletionPoint) {
	if event.Type != watch.Added {
		return
	}
	var host string
	switch obj := event.Object.(type) {
	case *ipamv1.IPClaim:
		host = hostOfClaim(obj.Name)
	case *ipamv1.IPAddress:
		host = hostOfClaim(obj.Spec.Claim.Name)
	case *corev1.Secret:
		host = strings.TrimSuffix(obj.Name, preprovv1.NetworkDataSecretSuffix)
	}
	if d.points[host] == point {
		d.delete(host)
	}
}

// hostOfClaim is the host of a claim named <host>-<pool>.
func hostOfClaim(claim string) string {
	for _, pool := range bothPools {
		if host, found := strings.CutSuffix(claim, "-"+pool); found {
			return host
		}
	}
	return ""
}

// delete deletes a host once.
func (d *hostDeleter) delete(name string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.deletedAt[name] {
		return
	}
	d.deletedAt[name] = true
	host := &bmov1alpha1.BareMetalHost{}
	host.Namespace, host.Name = d.namespace, name
	if err := d.cluster.Client.Delete(context.Background(), host); err != nil && !apierrors.IsNotFound(err) {
		d.errs = append(d.errs, err)
	}
}

func (d *hostDeleter) deleted() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	names := make([]string, 0, len(d.deletedAt))
	for name := range d.deletedAt {
		names = append(names, name)
	}
	return names
}

func (d *hostDeleter) errors() []error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.errs
}

func (d *hostDeleter) stop() {
	d.cancel()
	<-d.done
}
