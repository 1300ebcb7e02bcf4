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

package main

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/baremetal"
	"github.com/capm3-preprov/capm3-preprov/ipam"
)

// check returns every invariant the settled snapshot breaks. registered
// holds every host name the soak ever registered.
func (s *soak) check(ctx context.Context, snap *snapshot, registered map[string]bool) ([]string, error) {
	problems := addressesOnTwoMachines(snap)
	paused, err := s.pausedUnexplained(ctx, snap)
	if err != nil {
		return nil, err
	}
	problems = append(problems, paused...)
	problems = append(problems, leftOvers(snap, registered)...)
	found, err := panics(&s.managerLog)
	if err != nil {
		return nil, err
	}
	for _, line := range found {
		problems = append(problems, "panic in the manager's log: "+line)
	}
	denied, err := s.audit.denials()
	if err != nil {
		return nil, err
	}
	for _, request := range denied {
		problems = append(problems, "RBAC denial: "+request)
	}
	return problems, nil
}

// allocation is who IPAM gave an address to.
type allocation struct {
	claim string
	host  string
}

// addressesOnTwoMachines: no address is used by two hosts' machines (the
// OS, or a ramdisk as BMO's model records it), none used by one host's
// machine is allocated by IPAM to another host's claim, and none a machine
// uses is free in IPAM (where IPAM would give it to the next claim).
func addressesOnTwoMachines(snap *snapshot) []string {
	var problems []string
	users := map[string][]string{}
	usedBy := map[string]string{}
	for _, use := range snap.uses {
		for _, address := range use.Addresses {
			user := use.Host.Name + "'s " + use.System
			users[address] = append(users[address], user)
			if other, taken := usedBy[address]; taken && other != use.Host.Name {
				problems = append(problems, fmt.Sprintf("address on two machines: %s is used by %s", address, strings.Join(users[address], " and ")))
			}
			usedBy[address] = use.Host.Name
		}
	}
	allocated := allocations(snap)
	reserved := preAllocated(snap)
	for address, host := range usedBy {
		given, found := allocated[address]
		switch {
		case found && given.host != host:
			problems = append(problems, fmt.Sprintf("address on two machines: %s is used by %s and allocated by IPAM to IPClaim %s of host %s",
				address, strings.Join(users[address], " and "), given.claim, given.host))
		case !found && !reserved[address] && inSomePool(snap, address):
			problems = append(problems, fmt.Sprintf("address free while in use: %s is used by %s and IPAM holds it for no claim (the next claim gets it)",
				address, strings.Join(users[address], " and ")))
		}
	}
	slices.Sort(problems)
	return problems
}

// allocations maps each address IPAM gave to the claim and the host it is
// for: the consumer label the soak's CAPM3 puts on its claims (IPAM copies
// claim labels to the address), the live claim's host owner, or the claim
// name's "<host>-<pool>".
func allocations(snap *snapshot) map[string]allocation {
	claimHosts := map[string]string{}
	for _, claim := range snap.claims {
		for _, ref := range claim.OwnerReferences {
			if ref.Kind == "BareMetalHost" {
				claimHosts[claim.Name] = ref.Name
			}
		}
	}
	given := map[string]allocation{}
	for _, address := range snap.addresses {
		claim := address.Spec.Claim.Name
		host := address.Labels[consumerLabel]
		if host == "" {
			host = claimHosts[claim]
		}
		if host == "" {
			host = strings.TrimSuffix(claim, "-"+address.Spec.Pool.Name)
		}
		given[canonical(string(address.Spec.Address))] = allocation{claim: claim, host: host}
	}
	return given
}

func preAllocated(snap *snapshot) map[string]bool {
	reserved := map[string]bool{}
	for _, pool := range snap.pools {
		for _, address := range pool.Spec.PreAllocations {
			reserved[canonical(string(address))] = true
		}
	}
	return reserved
}

func canonical(address string) string {
	if parsed, err := netip.ParseAddr(address); err == nil {
		return parsed.String()
	}
	return address
}

// inSomePool: the address is in the range of a pool, so IPAM may give it.
func inSomePool(snap *snapshot, address string) bool {
	for _, pool := range snap.pools {
		if slices.Contains(poolAddresses(&pool), address) {
			return true
		}
	}
	return false
}

// poolAddresses are the addresses of a pool's ranges.
func poolAddresses(pool *ipamv1.IPPool) []string {
	var addresses []string
	for _, entry := range pool.Spec.Pools {
		for index := 0; ; index++ {
			ip, err := ipamv1.GetIPAddress(entry, index)
			if err != nil {
				break
			}
			addresses = append(addresses, canonical(string(ip)))
		}
	}
	return addresses
}

// freeAddresses counts the addresses of a pool IPAM could give now.
func freeAddresses(snap *snapshot, poolName string) int {
	taken := preAllocated(snap)
	for _, address := range snap.addresses {
		if address.Spec.Pool.Name == poolName {
			taken[canonical(string(address.Spec.Address))] = true
		}
	}
	free := 0
	for _, pool := range snap.pools {
		if pool.Name != poolName {
			continue
		}
		for _, address := range poolAddresses(&pool) {
			if !taken[address] {
				free++
			}
		}
	}
	return free
}

// pausedUnexplained: a host paused for us that exactly one template selects
// is set up, or a Warning event and its problem annotation say why with a
// real reason: its pool has no free address.
func (s *soak) pausedUnexplained(ctx context.Context, snap *snapshot) ([]string, error) {
	var problems []string
	var events *eventsv1.EventList
	for i := range snap.hosts {
		host := &snap.hosts[i]
		if host.Annotations[bmov1alpha1.PausedAnnotation] != preprovv1.PausedForPreprovisioning || !host.DeletionTimestamp.IsZero() {
			continue
		}
		selecting := selectingTemplates(snap, host)
		if len(selecting) != 1 {
			continue
		}
		template := selecting[0]
		reason := host.Annotations[preprovv1.ProblemAnnotation]
		if reason == "" {
			problems = append(problems, fmt.Sprintf("host %s is paused for us and selected by %s alone, but neither set up nor explained", host.Name, template.Name))
			continue
		}
		if events == nil {
			events = &eventsv1.EventList{}
			if err := s.c.List(ctx, events, client.InNamespace(namespace)); err != nil {
				return nil, err
			}
		}
		if !hasWarning(events, host, reason) {
			problems = append(problems, fmt.Sprintf("host %s is paused with problem %s but has no Warning event %s", host.Name, reason, reason))
		}
		pool := templatePool(&template)
		switch {
		case reason != baremetal.ReasonIPClaimFailed:
			problems = append(problems, fmt.Sprintf("host %s is paused for us with problem %s: no such problem can arise here", host.Name, reason))
		case freeAddresses(snap, pool) > 0:
			problems = append(problems, fmt.Sprintf("host %s is stranded: paused with %s while IPPool %s has %d free addresses",
				host.Name, reason, pool, freeAddresses(snap, pool)))
		}
	}
	return problems, nil
}

func selectingTemplates(snap *snapshot, host *bmov1alpha1.BareMetalHost) []preprovv1.Metal3PreprovisioningTemplate {
	var selecting []preprovv1.Metal3PreprovisioningTemplate
	for _, template := range snap.templates {
		if !template.DeletionTimestamp.IsZero() {
			continue
		}
		matches := true
		for key, value := range template.Spec.HostSelector.MatchLabels {
			if host.Labels[key] != value {
				matches = false
			}
		}
		if matches {
			selecting = append(selecting, template)
		}
	}
	return selecting
}

// templatePool is the pool of the soak's templates (one network, one pool).
func templatePool(template *preprovv1.Metal3PreprovisioningTemplate) string {
	if data := template.Spec.NetworkData; data != nil && data.Networks != nil && len(data.Networks.IPv4) > 0 {
		return data.Networks.IPv4[0].IPAddressFromIPPool
	}
	return ""
}

func hasWarning(events *eventsv1.EventList, host *bmov1alpha1.BareMetalHost, reason string) bool {
	for _, event := range events.Items {
		if event.Regarding.Name == host.Name && event.Regarding.UID == host.UID && event.Type == corev1.EventTypeWarning && event.Reason == reason {
			return true
		}
	}
	return false
}

// leftOvers: nothing is left of a deleted host (claims, addresses,
// Secret, pool pre-allocations), and nothing of an earlier host of the same
// name is left with a host registered again.
func leftOvers(snap *snapshot, registered map[string]bool) []string {
	live := map[string]*bmov1alpha1.BareMetalHost{}
	for i := range snap.hosts {
		live[snap.hosts[i].Name] = &snap.hosts[i]
	}
	claimNames := map[string]string{}
	for name := range registered {
		for pool := range pools {
			claimNames[ipam.ClaimName(name, poolName(pool))] = name
		}
	}
	var problems []string
	for _, claim := range snap.claims {
		name, ours := claimNames[claim.Name]
		if !ours {
			continue
		}
		if host := live[name]; host == nil {
			problems = append(problems, fmt.Sprintf("left of deleted host %s: IPClaim %s", name, claim.Name))
		} else if ownedByOther(claim.OwnerReferences, host) {
			problems = append(problems, fmt.Sprintf("left of an earlier host %s: IPClaim %s", name, claim.Name))
		}
	}
	for _, address := range snap.addresses {
		if name, ours := claimNames[address.Spec.Claim.Name]; ours && live[name] == nil {
			problems = append(problems, fmt.Sprintf("left of deleted host %s: IPAddress %s (%s)", name, address.Name, address.Spec.Address))
		}
	}
	for _, secret := range snap.secrets {
		name := strings.TrimSuffix(secret.Name, preprovv1.NetworkDataSecretSuffix)
		if !registered[name] || secret.Name != baremetal.NetworkDataSecretName(name) {
			continue
		}
		if host := live[name]; host == nil {
			problems = append(problems, fmt.Sprintf("left of deleted host %s: Secret %s", name, secret.Name))
		} else if ownedByOther(secret.OwnerReferences, host) {
			problems = append(problems, fmt.Sprintf("left of an earlier host %s: Secret %s", name, secret.Name))
		}
	}
	for _, pool := range snap.pools {
		for key, address := range pool.Spec.PreAllocations {
			if name, ours := claimNames[key]; ours && live[name] == nil {
				problems = append(problems, fmt.Sprintf("left of deleted host %s: IPPool %s preAllocations[%s] = %s", name, pool.Name, key, address))
			}
		}
	}
	slices.Sort(problems)
	return problems
}

// ownedByOther: an owner reference names a host of this name with another
// UID.
func ownedByOther(refs []metav1.OwnerReference, host *bmov1alpha1.BareMetalHost) bool {
	for _, ref := range refs {
		if ref.Kind == "BareMetalHost" && ref.Name == host.Name && ref.UID != host.UID {
			return true
		}
	}
	return false
}
