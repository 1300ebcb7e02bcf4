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

package ipam

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	capipamv1 "sigs.k8s.io/cluster-api/api/ipam/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/internal/expectations"
	"github.com/capm3-preprov/capm3-preprov/internal/ownership"
	"github.com/capm3-preprov/capm3-preprov/networkdata"
)

// Cluster API IPAM: one IPAddressClaim per host and pool, named as our
// IPClaims are, owned by the host; the provider of the pool's kind writes the
// IPAddress and names it in status.addressRef. What we read of them follows
// CAPM3 (DataManager.ensureIPClaim and addressFromClaim in
// baremetal/metal3data_manager.go): the address, prefix and gateway of the
// IPAddress, and no DNS servers (an IPAddress has none, and CAPM3's
// fetchDNSServersFromIPPool returns none for a pool that is not Metal3's).
// Unlike Metal3 IPAM, a provider keeps serving a claim it could not serve
// (the in-cluster provider requeues it and watches its pool), so a claim on
// an exhausted pool gets the next freed address by itself, and its update
// brings the host back.

// kindIPAddressClaim is the kind of our Cluster API claims in the writes store.
const kindIPAddressClaim = "IPAddressClaim"

// EnsureClusterAPI makes sure the host has one IPAddressClaim on each Cluster
// API IPAM pool and returns, pool by pool, its address or why there is none
// yet, as Ensure does for Metal3 IPPools.
func (c *Claims) EnsureClusterAPI(ctx context.Context, host *bmov1alpha1.BareMetalHost, pools []networkdata.Pool, users AddressUsers,
	writes *expectations.Writes,
) ([]PoolState, error) {
	states := make([]PoolState, 0, len(pools))
	for _, pool := range pools {
		state, err := c.ensureClusterAPIOne(ctx, host, pool, users, writes)
		if err != nil {
			return nil, err
		}
		states = append(states, state)
	}
	return states, nil
}

func (c *Claims) ensureClusterAPIOne(ctx context.Context, host *bmov1alpha1.BareMetalHost, pool networkdata.Pool,
	users AddressUsers, writes *expectations.Writes,
) (PoolState, error) {
	state := PoolState{Pool: pool.Name, Claim: ClaimName(host.Name, pool.Name), PoolKind: pool.Kind, ClaimKind: kindIPAddressClaim}
	if state.nameTooLong() {
		return state, nil
	}
	claim := &capipamv1.IPAddressClaim{}
	key := client.ObjectKey{Namespace: host.Namespace, Name: state.Claim}
	written := expectations.Key{Kind: kindIPAddressClaim, NamespacedName: key, Host: host.UID}
	getErr := c.Client.Get(ctx, key, claim)
	switch {
	case apierrors.IsNotFound(getErr):
		return c.createAddressClaim(ctx, host, pool, state, written, writes)
	case getErr != nil:
		return state, fmt.Errorf("getting IPAddressClaim %s: %w", key, getErr)
	}
	writes.Forget(written)

	switch {
	case !ownership.OwnedByHost(claim, host) && ownership.HasStaleHostOwner(claim, host):
		state.Waiting = fmt.Sprintf("IPAddressClaim %q belongs to an earlier BareMetalHost named %q; waiting for the garbage collector to remove it",
			state.Claim, host.Name)
		return state, nil
	case !ownership.OwnedByHost(claim, host):
		state.Failed = fmt.Sprintf("IPAddressClaim %q exists and is not this host's (its owners: %s): delete it, or rename the host "+
			"(the host's claim on %s is named <host>-<pool>)", state.Claim, ownerNames(claim), pool)
		return state, nil
	case !claim.DeletionTimestamp.IsZero():
		state.Waiting = fmt.Sprintf("IPAddressClaim %q is being deleted; a new one is created once it is gone", state.Claim)
		return state, nil
	case !claimsPool(claim, pool):
		return c.replaceClaimOfOtherPool(ctx, host, claim, pool, users, state)
	case claim.Status.AddressRef.Name == "":
		return c.unservedClaim(ctx, host, claim, pool, state)
	}
	return c.addressOfClaim(ctx, claim, pool, state)
}

// createAddressClaim creates the host's claim on a pool, once: a claim
// created and not in the cache yet is waited for.
func (c *Claims) createAddressClaim(ctx context.Context, host *bmov1alpha1.BareMetalHost, pool networkdata.Pool, state PoolState,
	written expectations.Key, writes *expectations.Writes,
) (PoolState, error) {
	if left, behind := writes.Behind(written, ""); behind {
		state.Waiting = fmt.Sprintf("IPAddressClaim %q was created; waiting for it to show in the cache", state.Claim)
		state.RetryAfter = left
		return state, nil
	}
	if err := c.Client.Create(ctx, newAddressClaim(host, pool, state.Claim)); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return c.claimOutsideCache(ctx, host, state)
		}
		return state, fmt.Errorf("creating IPAddressClaim %s/%s: %w", host.Namespace, state.Claim, err)
	}
	writes.Wrote(written, "")
	state.Waiting = fmt.Sprintf("waiting for the IPAM provider of %s to allocate an address for IPAddressClaim %q", pool, state.Claim)
	return state, nil
}

// newAddressClaim is the host's claim on a Cluster API IPAM pool. It
// carries no spec.clusterName: no Cluster exists before provisioning, and
// a provider then serves the claim without looking for one.
func newAddressClaim(host *bmov1alpha1.BareMetalHost, pool networkdata.Pool, name string) *capipamv1.IPAddressClaim {
	return &capipamv1.IPAddressClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name:      name,
			Namespace: host.Namespace,
			// Our label and the host's shard, so that the host's manager
			// caches the claim; CAPM3 never takes this claim over, it makes
			// its own <Metal3Data>-<pool>.
			Labels:          ownership.WithHostShard(host, map[string]string{preprovv1.ManagedLabel: preprovv1.ManagedLabelValue}),
			OwnerReferences: []metav1.OwnerReference{ownership.HostOwnerReference(host)},
		},
		Spec: capipamv1.IPAddressClaimSpec{
			PoolRef: capipamv1.IPPoolReference{APIGroup: pool.APIGroup, Kind: pool.Kind, Name: pool.Name},
		},
	}
}

func claimsPool(claim *capipamv1.IPAddressClaim, pool networkdata.Pool) bool {
	ref := claim.Spec.PoolRef
	return ref.Name == pool.Name && ref.APIGroup == pool.APIGroup && ref.Kind == pool.Kind
}

// replaceClaimOfOtherPool handles the host's claim of this name on a pool of
// another kind (the template changed the pool's kind, keeping its name):
// spec.poolRef cannot change, so the claim goes and a new one is made. The
// new claim can only be made under the same name once the old one is gone,
// so the old one goes only when nothing uses its address: neither the
// host's Secret nor a machine that booted with it.
func (c *Claims) replaceClaimOfOtherPool(ctx context.Context, host *bmov1alpha1.BareMetalHost, claim *capipamv1.IPAddressClaim,
	pool networkdata.Pool, users AddressUsers, state PoolState,
) (PoolState, error) {
	previous := networkdata.Pool{Name: claim.Spec.PoolRef.Name, APIGroup: claim.Spec.PoolRef.APIGroup, Kind: claim.Spec.PoolRef.Kind}
	inUse, err := c.clusterAPIAddressReferenced(ctx, claim, users.NetworkData)
	if err != nil {
		return state, err
	}
	var until string
	if !inUse && ownedForRelease(claim, host) {
		held, holdErr := c.holdForMachine(ctx, claim, Held{Kind: kindIPAddressClaim, Claim: claim.Name, Pool: previous}, users)
		if holdErr != nil {
			return state, holdErr
		}
		if held != nil {
			inUse, until = true, ": "+held.Until
		}
	}
	if inUse {
		state.Failed = fmt.Sprintf("IPAddressClaim %q claims from %s, not from %s the template now names, and the host may still "+
			"use its address (its network data Secret names it%s); a claim of that name on %s can only be made once it is "+
			"released: give %s another name in the template, so both claims can exist until the host no longer uses the old "+
			"address", state.Claim, previous, pool, until, pool, pool)
		return state, nil
	}
	ours := func(_ context.Context, claim *capipamv1.IPAddressClaim) (bool, error) {
		return ownership.Ours(claim) && ownership.OwnedByHost(claim, host) && claim.DeletionTimestamp.IsZero(), nil
	}
	deleted, err := deleteAsDecided(ctx, c.Client, c.apiReader(), claim, ours)
	if err != nil {
		return state, fmt.Errorf("releasing IPAddressClaim %s/%s on %s: %w", claim.Namespace, claim.Name, previous, err)
	}
	if !deleted {
		state.Failed = fmt.Sprintf("IPAddressClaim %q claims from %s, not from %s the template now names, and is not ours to "+
			"release: delete it", state.Claim, previous, pool)
		return state, nil
	}
	state.Waiting = fmt.Sprintf("IPAddressClaim %q claimed from %s; it is released, and a claim on %s is made once it is gone",
		state.Claim, previous, pool)
	return state, nil
}

// unservedClaim says why a claim has no address yet: the provider refused
// it, its pool's kind or the pool itself is missing, or the provider has not
// acted yet. Providers need not say they refused: the in-cluster provider
// writes no condition on a claim it cannot serve (ipamutil.ClaimReconciler
// returns the error and retries), so an empty pool is read from the pool's
// status too, and a waiting host is looked at again.
func (c *Claims) unservedClaim(ctx context.Context, host *bmov1alpha1.BareMetalHost, claim *capipamv1.IPAddressClaim,
	pool networkdata.Pool, state PoolState,
) (PoolState, error) {
	const fix = "the provider serves the claim when the pool has a free address again: add addresses to the pool, or release one"
	ready := meta.FindStatusCondition(claim.Status.Conditions, capipamv1.IPAddressClaimReadyCondition)
	if ready != nil && ready.Status == metav1.ConditionFalse &&
		(ready.Reason == capipamv1.IPAddressClaimReadyPoolExhaustedReason || ready.Reason == capipamv1.IPAddressClaimReadyAllocationFailedReason) {
		state.Failed = fmt.Sprintf("the IPAM provider of %s could not allocate an address for IPAddressClaim %q (%s: %s); %s",
			pool, claim.Name, ready.Reason, ready.Message, fix)
		return state, nil
	}
	problem, err := c.clusterAPIPoolProblem(ctx, host, pool)
	if err != nil {
		return state, err
	}
	switch problem.kind {
	case poolUnusable:
		state.Failed = problem.message
		return state, nil
	case poolExhausted:
		// The pool's count may already hold this claim's address, which
		// the cache has not shown on the claim yet.
		fresh, err := reread(ctx, c.apiReader(), claim)
		if err != nil {
			return state, err
		}
		if fresh != nil && fresh.Status.AddressRef.Name != "" {
			return c.addressOfClaim(ctx, fresh, pool, state)
		}
		state.Failed = fmt.Sprintf("%s has no free address (%s), so its IPAM provider cannot allocate one for IPAddressClaim %q; %s",
			pool, problem.message, claim.Name, fix)
		return state, nil
	}
	state.Waiting = fmt.Sprintf("waiting for the IPAM provider of %s to allocate an address for IPAddressClaim %q", pool, claim.Name)
	if ready != nil && ready.Message != "" {
		state.Waiting += fmt.Sprintf(" (%s: %s)", ready.Reason, ready.Message)
	}
	state.RetryAfter = clusterAPIRecheck(problem.freeCounted, c.clock().Since(claim.CreationTimestamp.Time))
	return state, nil
}

const (
	// ClusterAPIRecheck is how often a host waiting for a Cluster API IPAM
	// provider that counts its pool's free addresses looks at the pool
	// again: nothing of the pool's is watched, and a provider may fail a
	// claim without a word on it (an empty pool is told by its count).
	ClusterAPIRecheck = 10 * time.Second
	// ClusterAPIRecheckLimit is the longest a host waits between two looks
	// at a pool whose provider counts no free address: such a look can only
	// tell that the pool or its kind went missing, and the claim's own
	// update brings the host back when its address comes.
	ClusterAPIRecheckLimit = 5 * time.Minute
)

// clusterAPIRecheck is when a host waiting for an address looks at its pool
// again: every ClusterAPIRecheck when the pool counts its free addresses,
// otherwise after as long as the claim has waited (a back-off, doubling),
// from ClusterAPIRecheck up to ClusterAPIRecheckLimit.
func clusterAPIRecheck(freeCounted bool, waited time.Duration) time.Duration {
	if freeCounted {
		return ClusterAPIRecheck
	}
	return min(max(waited, ClusterAPIRecheck), ClusterAPIRecheckLimit)
}

// poolProblem is what a pool tells of a claim it does not serve.
type poolProblem struct {
	kind    poolProblemKind
	message string
	// freeCounted is whether the pool's status counts its free addresses.
	freeCounted bool
}

type poolProblemKind int

const (
	// poolUsable: nothing the pool tells stops the claim.
	poolUsable poolProblemKind = iota
	// poolUnusable: the pool's kind is served by no API, or the pool does
	// not exist.
	poolUnusable
	// poolExhausted: the pool's status says it has no free address, as the
	// in-cluster provider's pools do (status.ipAddresses.free, 0 or less).
	poolExhausted
)

// clusterAPIPoolProblem reads the pool a claim waits on from the API (only
// claims waiting for an address pay for it): a kind no API serves or a pool
// that does not exist is for a user to fix, and a pool whose status counts
// no free address is exhausted.
func (c *Claims) clusterAPIPoolProblem(ctx context.Context, host *bmov1alpha1.BareMetalHost, pool networkdata.Pool) (poolProblem, error) {
	mapping, err := c.Client.RESTMapper().RESTMapping(schema.GroupKind{Group: pool.APIGroup, Kind: pool.Kind})
	if meta.IsNoMatchError(err) {
		return poolProblem{kind: poolUnusable, message: fmt.Sprintf("no API of the cluster serves kind %q of apiGroup %s: install the "+
			"Cluster API IPAM provider of %s (the in-cluster provider serves InClusterIPPool and GlobalInClusterIPPool), or fix the "+
			"pool's kind in the template", pool.Kind, pool.APIGroup, pool)}, nil
	}
	if err != nil {
		return poolProblem{}, fmt.Errorf("finding the API of %s: %w", pool, err)
	}
	key := client.ObjectKey{Name: pool.Name}
	where := "in the cluster"
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		key.Namespace, where = host.Namespace, fmt.Sprintf("in namespace %q", host.Namespace)
	}
	readKey := clusterAPIPoolKey{GroupKind: mapping.GroupVersionKind.GroupKind(), ObjectKey: key}
	if problem, fresh := c.clusterAPIPools.get(readKey, c.clock().Now()); fresh {
		return problem, nil
	}
	problem, err := c.readClusterAPIPool(ctx, mapping, key, pool, where)
	if err == nil {
		c.clusterAPIPools.put(readKey, problem, c.clock().Now())
	}
	return problem, err
}

// readClusterAPIPool reads the pool from the API and tells what stops its
// claims, if anything.
func (c *Claims) readClusterAPIPool(ctx context.Context, mapping *meta.RESTMapping, key client.ObjectKey, pool networkdata.Pool,
	where string,
) (poolProblem, error) {
	object := &unstructured.Unstructured{}
	object.SetGroupVersionKind(mapping.GroupVersionKind)
	err := c.apiReader().Get(ctx, key, object)
	switch {
	case apierrors.IsNotFound(err):
		return poolProblem{kind: poolUnusable, message: fmt.Sprintf("%s does not exist %s: create it, or fix the pool's name in the template",
			pool, where)}, nil
	case err != nil:
		return poolProblem{}, fmt.Errorf("getting %s: %w", pool, err)
	}
	// The in-cluster provider counts free as total less used: below zero
	// when addresses left outside a shrunk pool are still held.
	free, counted, err := unstructured.NestedInt64(object.Object, "status", "ipAddresses", "free")
	counted = counted && err == nil
	if counted && free <= 0 {
		return poolProblem{kind: poolExhausted, message: fmt.Sprintf("its status.ipAddresses.free is %d", free), freeCounted: true}, nil
	}
	return poolProblem{kind: poolUsable, freeCounted: counted}, nil
}

// clusterAPIPoolKey names a Cluster API pool of any kind.
type clusterAPIPoolKey struct {
	schema.GroupKind
	client.ObjectKey
}

// clusterAPIPoolReads are the Cluster API pools read lately: the hosts
// waiting on a pool share one read of it every ClusterAPIRecheck, instead
// of one read each.
type clusterAPIPoolReads struct {
	mu   sync.Mutex
	read map[clusterAPIPoolKey]clusterAPIPoolRead
}

type clusterAPIPoolRead struct {
	problem poolProblem
	at      time.Time
}

// get is what the pool told at most ClusterAPIRecheck ago, if it was read.
func (r *clusterAPIPoolReads) get(key clusterAPIPoolKey, now time.Time) (poolProblem, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	read, ok := r.read[key]
	if !ok || now.Sub(read.at) >= ClusterAPIRecheck {
		return poolProblem{}, false
	}
	return read.problem, true
}

// put records what the pool told now, and forgets the reads gone stale.
func (r *clusterAPIPoolReads) put(key clusterAPIPoolKey, problem poolProblem, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.read == nil {
		r.read = map[clusterAPIPoolKey]clusterAPIPoolRead{}
	}
	for stale, read := range r.read {
		if now.Sub(read.at) >= ClusterAPIRecheck {
			delete(r.read, stale)
		}
	}
	r.read[key] = clusterAPIPoolRead{problem: problem, at: now}
}

// addressOfClaim reads the IPAddress the claim names. The cache has it
// unless it came a moment ago or carries no label of the host's shard
// (providers need not copy the claim's labels): then the API is asked.
func (c *Claims) addressOfClaim(ctx context.Context, claim *capipamv1.IPAddressClaim, pool networkdata.Pool, state PoolState,
) (PoolState, error) {
	address := &capipamv1.IPAddress{}
	key := client.ObjectKey{Namespace: claim.Namespace, Name: claim.Status.AddressRef.Name}
	err := c.Client.Get(ctx, key, address)
	if apierrors.IsNotFound(err) {
		err = c.apiReader().Get(ctx, key, address)
	}
	switch {
	case apierrors.IsNotFound(err):
		state.Waiting = fmt.Sprintf("IPAddressClaim %q names IPAddress %q, which does not exist; waiting for the IPAM provider of %s to write it",
			claim.Name, key.Name, pool)
		return state, nil
	case err != nil:
		return state, fmt.Errorf("getting IPAddress %s: %w", key, err)
	case address.Spec.ClaimRef.Name != claim.Name:
		state.Failed = fmt.Sprintf("IPAddressClaim %q names IPAddress %q, which was allocated to IPAddressClaim %q: "+
			"the IPAM provider of %s broke the Cluster API IPAM contract; delete the claim to have it made again",
			claim.Name, key.Name, address.Spec.ClaimRef.Name, pool)
		return state, nil
	case address.Spec.Prefix == nil:
		state.Failed = fmt.Sprintf("IPAddress %q of %s has no prefix: CAPM3 would render an empty netmask, which Ironic's "+
			"network_data schema refuses; give the pool a prefix", key.Name, pool)
		return state, nil
	}
	state.Address = addressOfClusterAPI(address)
	return state, nil
}

// addressOfClusterAPI is what CAPM3's addressFromClaim takes of an
// IPAddress: address, prefix and gateway.
func addressOfClusterAPI(address *capipamv1.IPAddress) *networkdata.Address {
	return &networkdata.Address{IP: address.Spec.Address, Prefix: int(*address.Spec.Prefix), Gateway: address.Spec.Gateway}
}

func ownerNames(obj metav1.Object) string {
	if len(obj.GetOwnerReferences()) == 0 {
		return "none"
	}
	names := make([]string, 0, len(obj.GetOwnerReferences()))
	for _, ref := range obj.GetOwnerReferences() {
		names = append(names, fmt.Sprintf("%s %q", ref.Kind, ref.Name))
	}
	return strings.Join(names, ", ")
}
