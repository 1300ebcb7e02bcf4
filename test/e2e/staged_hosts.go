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
	"encoding/json"
	"strconv"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/internal/ownership"
	"github.com/capm3-preprov/capm3-preprov/ipam"
	"github.com/capm3-preprov/capm3-preprov/test/framework/fixtures"
)

// hostStep is how far the manager took a host before it stopped: the
// states a SIGKILL (or a host deletion) can leave between two of its steps.
type hostStep string

const (
	// stepRegistered: the manager never saw the host.
	stepRegistered hostStep = "registered"
	// stepFirstClaim: it created the claim on the first of the two pools.
	stepFirstClaim hostStep = "first-claim"
	// stepClaims: it created both claims; IPAM has not answered yet.
	stepClaims hostStep = "claims"
	// stepAddresses: IPAM allocated both addresses.
	stepAddresses hostStep = "addresses"
	// stepStaleSecret: the Secret holds what an earlier render wrote (the
	// template changed while no manager ran).
	stepStaleSecret hostStep = "stale-secret"
	// stepSecretWritten: everything but the host patch.
	stepSecretWritten hostStep = "secret-written"
)

var allSteps = []hostStep{stepRegistered, stepFirstClaim, stepClaims, stepAddresses, stepStaleSecret, stepSecretWritten}

// staleMTU is the MTU of the provisioning link in a stale Secret.
const staleMTU = 1400

// stagedHosts are hosts left at each step with the manager and IPAM
// stopped, and what they held then.
type stagedHosts struct {
	hosts map[hostStep][]string
	// addresses are the addresses of the hosts that had them.
	addresses map[string]hostAddresses
	// secrets are the Secrets of the hosts that had one.
	secrets map[string]*corev1.Secret
}

func (s stagedHosts) all() []string {
	var names []string
	for _, step := range allSteps {
		names = append(names, s.hosts[step]...)
	}
	return names
}

// stageHostsAtEachStep leaves perStep hosts at each step in namespace, the
// way the manager leaves them: the last two steps are hosts it set up and
// that are then rewound to just before their patch; the others get the
// claims the manager makes. It returns with the manager and IPAM stopped.
func (c *Cluster) stageHostsAtEachStep(ctx context.Context, namespace string, perStep int) stagedHosts {
	local := c.Local
	staged := stagedHosts{hosts: map[hostStep][]string{}, addresses: map[string]hostAddresses{}, secrets: map[string]*corev1.Secret{}}
	index := 0
	register := func(step hostStep) []string {
		names := hostNames(string(step), perStep)
		c.create(ctx, newHosts(namespace, names, index, workers)...)
		index += perStep
		staged.hosts[step] = names
		return names
	}
	c.createWorkerTemplate(ctx, namespace, 241)

	By("Letting the manager set hosts up, to rewind them to just before their patch")
	setUp := append(register(stepSecretWritten), register(stepStaleSecret)...)
	Eventually(func(g Gomega) { c.expectHostsSetUp(ctx, g, namespace, setUp, bothPools) }).Should(Succeed())
	Expect(local.Manager.Stop()).To(Succeed())
	for _, name := range setUp {
		c.patchHost(ctx, namespace, name, rewindPatch)
		staged.addresses[name] = c.addressesOf(ctx, Default, namespace, name)
	}
	for _, name := range staged.hosts[stepStaleSecret] {
		c.makeSecretStale(ctx, namespace, name)
	}
	for _, name := range setUp {
		staged.secrets[name] = c.networkDataSecret(ctx, Default, namespace, name)
	}

	By("Claiming both addresses of hosts as the manager does, and letting IPAM allocate them")
	for _, name := range register(stepAddresses) {
		c.claimAs(ctx, namespace, name, bothPools...)
	}
	Eventually(func(g Gomega) {
		for _, name := range staged.hosts[stepAddresses] {
			staged.addresses[name] = c.addressesOf(ctx, g, namespace, name)
			g.Expect(staged.addresses[name]).To(HaveLen(len(bothPools)))
		}
	}).Should(Succeed())

	By("Stopping IPAM, and claiming for hosts whose claims it has not answered yet")
	Expect(local.IPAM.Stop()).To(Succeed())
	for _, name := range register(stepFirstClaim) {
		c.claimAs(ctx, namespace, name, fixtures.ProvisioningPool)
	}
	for _, name := range register(stepClaims) {
		c.claimAs(ctx, namespace, name, bothPools...)
	}
	register(stepRegistered)
	return staged
}

// rewindPatch undoes the manager's one patch on a host: paused for us
// again, no network data Secret named, not marked as ours.
func rewindPatch(host *bmov1alpha1.BareMetalHost) {
	host.Annotations[preprovv1.PausedAnnotation] = preprovv1.PausedForPreprovisioning
	delete(host.Annotations, preprovv1.TemplateAnnotation)
	delete(host.Labels, preprovv1.ManagedLabel)
	host.Spec.PreprovisioningNetworkDataName = ""
}

// makeSecretStale changes the provisioning link's MTU in a host's Secret, as
// a render from an earlier version of the template would have it.
func (c *Cluster) makeSecretStale(ctx context.Context, namespace, host string) {
	GinkgoHelper()
	secret := c.networkDataSecret(ctx, Default, namespace, host)
	document := c.networkData(ctx, Default, namespace, host)
	links, ok := document["links"].([]any)
	Expect(ok).To(BeTrue(), "links is a list")
	Expect(links).NotTo(BeEmpty())
	link, ok := links[0].(map[string]any)
	Expect(ok).To(BeTrue(), "a link is an object")
	link["mtu"] = staleMTU
	stale, err := json.Marshal(document)
	Expect(err).NotTo(HaveOccurred())
	original := secret.DeepCopy()
	secret.Data[preprovv1.NetworkDataKey] = stale
	Expect(c.Client.Patch(ctx, secret, client.MergeFrom(original))).To(Succeed())
}

// claimAs creates the claims the manager creates for a host: <host>-<pool>,
// owned by the host, with our label and the pool generation.
func (c *Cluster) claimAs(ctx context.Context, namespace, hostName string, pools ...string) {
	GinkgoHelper()
	host := c.getHost(ctx, Default, namespace, hostName)
	for _, poolName := range pools {
		pool := &ipamv1.IPPool{}
		Expect(c.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: poolName}, pool)).To(Succeed())
		c.create(ctx, &ipamv1.IPClaim{
			ObjectMeta: metav1.ObjectMeta{
				Namespace:       namespace,
				Name:            ipam.ClaimName(hostName, poolName),
				Labels:          map[string]string{preprovv1.ManagedLabel: preprovv1.ManagedLabelValue},
				Annotations:     map[string]string{preprovv1.PoolGenerationAnnotation: strconv.FormatInt(pool.Generation, 10)},
				OwnerReferences: []metav1.OwnerReference{ownership.HostOwnerReference(host)},
			},
			Spec: ipamv1.IPClaimSpec{Pool: corev1.ObjectReference{Namespace: namespace, Name: poolName}},
		})
	}
}
