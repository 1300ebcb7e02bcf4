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

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/baremetal"
	"github.com/capm3-preprov/capm3-preprov/test/framework"
)

// CAPM3's labels on the claims it owns: it deletes claims carrying them when
// it deprovisions, so ours must never carry them.
var capm3ClaimLabels = []string{"infrastructure.cluster.x-k8s.io/data-name", "infrastructure.cluster.x-k8s.io/pool-name"}

// namespaceState is what a namespace holds of hosts, claims, addresses and
// Secrets, read from the API server at one moment.
type namespaceState struct {
	hosts     map[string]*bmov1alpha1.BareMetalHost
	claims    []ipamv1.IPClaim
	addresses []ipamv1.IPAddress
	secrets   []corev1.Secret
}

func (c *Cluster) readNamespace(ctx context.Context, g Gomega, namespace string) namespaceState {
	inNamespace := client.InNamespace(namespace)
	hosts := &bmov1alpha1.BareMetalHostList{}
	claims := &ipamv1.IPClaimList{}
	addresses := &ipamv1.IPAddressList{}
	secrets := &corev1.SecretList{}
	for _, list := range []client.ObjectList{hosts, claims, addresses, secrets} {
		g.Expect(c.Client.List(ctx, list, inNamespace)).To(Succeed())
	}
	state := namespaceState{
		hosts:     map[string]*bmov1alpha1.BareMetalHost{},
		claims:    claims.Items,
		addresses: addresses.Items,
		secrets:   secrets.Items,
	}
	for i := range hosts.Items {
		state.hosts[hosts.Items[i].Name] = &hosts.Items[i]
	}
	return state
}

func ownedBy(obj client.Object, uid types.UID) bool {
	for _, ref := range obj.GetOwnerReferences() {
		if ref.UID == uid {
			return true
		}
	}
	return false
}

// itemsOwnedBy are the items of a list (claims, Secrets) the object with
// this uid owns.
func itemsOwnedBy[T any, PT interface {
	*T
	client.Object
}](items []T, uid types.UID) []T {
	var owned []T
	for i := range items {
		if ownedBy(PT(&items[i]), uid) {
			owned = append(owned, items[i])
		}
	}
	return owned
}

func (s namespaceState) address(name string) *ipamv1.IPAddress {
	for i := range s.addresses {
		if s.addresses[i].Name == name {
			return &s.addresses[i]
		}
	}
	return nil
}

// expectHostsSetUp checks that each host is set up, with everything once:
// unpaused and pointing at its Secret; exactly one claim per pool, named
// <host>-<pool>, owned by the host, without CAPM3's labels, with exactly one
// IPAddress; exactly one Secret, whose network data holds those addresses.
// And across the namespace no address is given twice and none is left
// without its claim.
func (c *Cluster) expectHostsSetUp(ctx context.Context, g Gomega, namespace string, hosts []string, pools []string) {
	state := c.readNamespace(ctx, g, namespace)
	for _, name := range hosts {
		host, found := state.hosts[name]
		g.Expect(found).To(BeTrue(), "host %s does not exist", name)
		g.Expect(host.Annotations).NotTo(HaveKeyWithValue(preprovv1.PausedAnnotation, preprovv1.PausedForPreprovisioning),
			"host %s is still paused for preprovisioning", name)
		g.Expect(host.Spec.PreprovisioningNetworkDataName).To(Equal(baremetal.NetworkDataSecretName(name)), "host %s", name)
		g.Expect(host.Labels).To(HaveKeyWithValue(preprovv1.ManagedLabel, preprovv1.ManagedLabelValue), "host %s", name)

		claims := itemsOwnedBy(state.claims, host.UID)
		claimedPools := make([]string, 0, len(claims))
		var ips []string
		for _, claim := range claims {
			claimedPools = append(claimedPools, claim.Spec.Pool.Name)
			g.Expect(claim.Name).To(Equal(name+"-"+claim.Spec.Pool.Name), "claim of host %s", name)
			for _, label := range capm3ClaimLabels {
				g.Expect(claim.Labels).NotTo(HaveKey(label), "claim %s", claim.Name)
			}
			g.Expect(claim.Status.Address).NotTo(BeNil(), "claim %s has no address", claim.Name)
			address := state.address(claim.Status.Address.Name)
			g.Expect(address).NotTo(BeNil(), "IPAddress %s of claim %s", claim.Status.Address.Name, claim.Name)
			g.Expect(address.Spec.Claim.Name).To(Equal(claim.Name))
			ips = append(ips, string(address.Spec.Address))
		}
		g.Expect(claimedPools).To(ConsistOf(pools), "host %s must hold exactly one claim per pool", name)

		secrets := itemsOwnedBy(state.secrets, host.UID)
		g.Expect(secrets).To(HaveLen(1), "host %s must own exactly one Secret", name)
		g.Expect(secrets[0].Name).To(Equal(baremetal.NetworkDataSecretName(name)))
		g.Expect(secrets[0].Labels).To(HaveKeyWithValue(preprovv1.ManagedLabel, preprovv1.ManagedLabelValue))
		g.Expect(secrets[0].Labels).To(HaveKeyWithValue(preprovv1.BMOSecretLabel, preprovv1.BMOSecretLabelValue))
		g.Expect(networkDataIPs(g, &secrets[0])).To(ConsistOf(ips), "network data of host %s", name)
	}
	expectNoAddressGivenTwice(g, state)
	c.expectConsumersAccept(ctx, namespace, hosts, state)
}

// expectNoAddressGivenTwice checks every pool of the namespace: no address
// twice, at most one IPAddress per claim, and no IPAddress whose claim is
// gone.
func expectNoAddressGivenTwice(g Gomega, state namespaceState) {
	claims := map[string]bool{}
	for _, claim := range state.claims {
		claims[claim.Name] = true
	}
	addressesOfPool := map[string]map[string]string{}
	addressOfClaim := map[string]string{}
	for _, address := range state.addresses {
		pool, ip, claim := address.Spec.Pool.Name, string(address.Spec.Address), address.Spec.Claim.Name
		if addressesOfPool[pool] == nil {
			addressesOfPool[pool] = map[string]string{}
		}
		g.Expect(addressesOfPool[pool]).NotTo(HaveKey(ip), "%s of pool %s is given to %s and %s", ip, pool, addressesOfPool[pool][ip], claim)
		addressesOfPool[pool][ip] = claim
		g.Expect(addressOfClaim).NotTo(HaveKey(claim), "claim %s has two IPAddresses", claim)
		addressOfClaim[claim] = address.Name
		g.Expect(claims).To(HaveKey(claim), "IPAddress %s is left over from a claim that is gone", address.Name)
	}
}

// networkDataIPs are the addresses of the networks in a Secret's network data.
func networkDataIPs(g Gomega, secret *corev1.Secret) []string {
	var networkData struct {
		Networks []struct {
			IPAddress string `json:"ip_address"`
		} `json:"networks"`
	}
	g.Expect(json.Unmarshal(secret.Data[preprovv1.NetworkDataKey], &networkData)).To(Succeed())
	var ips []string
	for _, network := range networkData.Networks {
		if network.IPAddress != "" {
			ips = append(ips, network.IPAddress)
		}
	}
	return ips
}

// networkData is a host's network data document, decoded.
func (c *Cluster) networkData(ctx context.Context, g Gomega, namespace, host string) map[string]any {
	document, err := framework.NetworkData(ctx, c.Client, namespace, host)
	g.Expect(err).NotTo(HaveOccurred())
	return document
}

func (c *Cluster) networkDataSecret(ctx context.Context, g Gomega, namespace, host string) *corev1.Secret {
	secret := &corev1.Secret{}
	g.Expect(c.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: baremetal.NetworkDataSecretName(host)}, secret)).To(Succeed())
	return secret
}

// hostAddresses maps each pool to the claim UID and address of a host.
type hostAddresses map[string]struct {
	ClaimUID types.UID
	IP       string
}

func (c *Cluster) addressesOf(ctx context.Context, g Gomega, namespace, hostName string) hostAddresses {
	state := c.readNamespace(ctx, g, namespace)
	host, found := state.hosts[hostName]
	g.Expect(found).To(BeTrue(), "host %s does not exist", hostName)
	addresses := hostAddresses{}
	for _, claim := range itemsOwnedBy(state.claims, host.UID) {
		g.Expect(claim.Status.Address).NotTo(BeNil(), "claim %s has no address", claim.Name)
		address := state.address(claim.Status.Address.Name)
		g.Expect(address).NotTo(BeNil())
		addresses[claim.Spec.Pool.Name] = struct {
			ClaimUID types.UID
			IP       string
		}{claim.UID, string(address.Spec.Address)}
	}
	return addresses
}

// expectUntouched checks that a host is as its user registered it: paused
// with this value, no network data, not marked as ours, no Secret and no
// claim of ours.
func (c *Cluster) expectUntouched(ctx context.Context, g Gomega, namespace, name, pausedValue string) {
	state := c.readNamespace(ctx, g, namespace)
	host, found := state.hosts[name]
	g.Expect(found).To(BeTrue(), "host %s does not exist", name)
	g.Expect(host.Annotations).To(HaveKeyWithValue(preprovv1.PausedAnnotation, pausedValue), "host %s", name)
	g.Expect(host.Spec.PreprovisioningNetworkDataName).To(BeEmpty(), "host %s", name)
	g.Expect(host.Labels).NotTo(HaveKey(preprovv1.ManagedLabel), "host %s", name)
	g.Expect(itemsOwnedBy(state.claims, host.UID)).To(BeEmpty(), "claims of host %s", name)
	for _, secret := range state.secrets {
		g.Expect(secret.Name).NotTo(Equal(baremetal.NetworkDataSecretName(name)))
	}
}

// expectNothingLeftOf checks that no claim, IPAddress or Secret of a deleted
// host remains, by name and by owner.
func (c *Cluster) expectNothingLeftOf(ctx context.Context, g Gomega, namespace string, hosts []string) {
	state := c.readNamespace(ctx, g, namespace)
	for _, name := range hosts {
		g.Expect(state.hosts).NotTo(HaveKey(name), "host %s is not gone", name)
		prefix := name + "-"
		for _, claim := range state.claims {
			g.Expect(claim.Name).NotTo(HavePrefix(prefix), "claim %s of deleted host %s remains", claim.Name, name)
		}
		for _, address := range state.addresses {
			g.Expect(address.Spec.Claim.Name).NotTo(HavePrefix(prefix), "IPAddress %s of deleted host %s remains (deletion %v, finalizers %v, owners %v)",
				address.Name, name, address.DeletionTimestamp, address.Finalizers, address.OwnerReferences)
		}
		for _, secret := range state.secrets {
			g.Expect(secret.Name).NotTo(Equal(baremetal.NetworkDataSecretName(name)), "Secret of deleted host %s remains", name)
		}
	}
}

// hostEvents are the events regarding a host.
func (c *Cluster) hostEvents(ctx context.Context, g Gomega, namespace, host string) []eventsv1.Event {
	var regarding []eventsv1.Event
	for _, event := range c.events(ctx, g, namespace) {
		if event.Regarding.Kind == "BareMetalHost" && event.Regarding.Name == host {
			regarding = append(regarding, event)
		}
	}
	return regarding
}

// events are the events of a namespace.
func (c *Cluster) events(ctx context.Context, g Gomega, namespace string) []eventsv1.Event {
	events := &eventsv1.EventList{}
	g.Expect(c.Client.List(ctx, events, client.InNamespace(namespace))).To(Succeed())
	return events.Items
}

// expectEvent checks that a host has an event of this type and reason whose
// note says all of the given parts.
func (c *Cluster) expectEvent(ctx context.Context, g Gomega, namespace, host, eventType, reason string, parts ...string) {
	expectEventIn(g, c.hostEvents(ctx, g, namespace, host), host, eventType, reason, parts...)
}

// expectEventIn is expectEvent on events already read (of the namespace or
// of the host).
func expectEventIn(g Gomega, events []eventsv1.Event, host, eventType, reason string, parts ...string) {
	notes := []string{}
	for _, event := range events {
		if event.Regarding.Kind == "BareMetalHost" && event.Regarding.Name == host && event.Type == eventType && event.Reason == reason {
			notes = append(notes, event.Note)
		}
	}
	g.Expect(notes).NotTo(BeEmpty(), "no %s event %s on host %s", eventType, reason, host)
	g.Expect(notes).To(ContainElement(SatisfyAll(containsAll(parts)...)), "events %s on host %s", reason, host)
}

func containsAll(parts []string) []OmegaMatcher {
	matchers := []OmegaMatcher{Not(BeEmpty())}
	for _, part := range parts {
		matchers = append(matchers, ContainSubstring(part))
	}
	return matchers
}

// leaderLease is the managers' leader election Lease.
func (c *Cluster) leaderLease(ctx context.Context, g Gomega) *coordinationv1.Lease {
	lease := &coordinationv1.Lease{}
	g.Expect(c.Client.Get(ctx, client.ObjectKey{Namespace: managerNamespace, Name: leaderElectionLease}, lease)).To(Succeed())
	return lease
}

// holder is the Lease's holder identity, "" when released.
func holder(lease *coordinationv1.Lease) string {
	if lease.Spec.HolderIdentity == nil {
		return ""
	}
	return *lease.Spec.HolderIdentity
}

// countClaims counts the claims of a namespace.
func (c *Cluster) countClaims(ctx context.Context, g Gomega, namespace string) int {
	claims := &ipamv1.IPClaimList{}
	g.Expect(c.Client.List(ctx, claims, client.InNamespace(namespace))).To(Succeed())
	return len(claims.Items)
}
