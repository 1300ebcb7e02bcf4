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

// Package ipam claims IP addresses for hosts from Metal3 IPAM IPPools and
// reads them back, following the IPClaim/IPAddress contract of
// metal3-io/ip-address-manager.
//
// Layer: above api/v1beta1, networkdata and the internal/ leaves, below
// baremetal.
package ipam

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/internal/expectations"
	"github.com/capm3-preprov/capm3-preprov/internal/ownership"
	"github.com/capm3-preprov/capm3-preprov/networkdata"
)

// ClaimName is the name of the IPClaim a host holds on a pool. CAPM3 looks up
// the same name ("<bmh>-<pool>") when it renders the host's Metal3Data, which
// is how the host keeps its IP after provisioning.
func ClaimName(hostName, poolName string) string {
	return hostName + "-" + poolName
}

// PoolState is where a host's address from one pool stands.
type PoolState struct {
	Pool  string
	Claim string
	// PoolKind and ClaimKind tell the families apart: IPPool and IPClaim for
	// Metal3 IPAM, the provider's pool kind and IPAddressClaim for Cluster
	// API IPAM.
	PoolKind, ClaimKind string
	// Address is set once IPAM has allocated an address for the claim, and
	// ClaimUID then names the claim that holds it.
	Address  *networkdata.Address
	ClaimUID types.UID
	// Waiting says why the address is not there yet, when it will come
	// without anybody's help (IPAM has not acted yet, a retry is under way).
	Waiting string
	// RetryAfter, when set, is when to look again if no event on the claim
	// comes first.
	RetryAfter time.Duration
	// Failed says what is wrong when it needs a user's fix (no such pool,
	// the pool is exhausted, a claim of that name belongs to somebody else).
	Failed string
	// Remade, when set, says why the host's claim was deleted to be made
	// again: worth an event.
	Remade string
}

// Claims ensures the IPClaims of hosts and reads their addresses.
type Claims struct {
	Client client.Client
	// APIReader reads past the cache: to decide again on a claim or address
	// that changed since the cache showed it, and what the cache does not
	// hold, such as objects of another shard (--watch-filter); the Client
	// when nil.
	APIReader client.Reader
	// Clock tells how long a claim has pointed at a missing IPAddress and
	// since when a claim's address is no longer in its host's network data
	// (the real clock when nil).
	Clock clock.PassiveClock
	// Indexed is a Client that reads the manager's cache with our field
	// indexes (internal/index): the IPAddresses left behind a claim are
	// found through one; elsewhere they are listed by our label.
	Indexed bool

	// retries carry the note of a failed claim deleted to be made again.
	retries pendingRetries
	// missing tells since when claims point at an IPAddress that is gone.
	missing missingAddresses
	// clusterAPIPools are the Cluster API pools read lately, shared by the
	// hosts waiting on them.
	clusterAPIPools clusterAPIPoolReads
}

// kindIPClaim is the kind of our claims in the writes store.
const kindIPClaim = "IPClaim"

// nameTooLong fails a state whose claim name the API server would refuse.
func (s *PoolState) nameTooLong() bool {
	if len(s.Claim) <= validation.DNS1123SubdomainMaxLength {
		return false
	}
	s.Failed = fmt.Sprintf("the %s of this host on %s %q would be named %q (%d characters), over the limit of %d: "+
		"shorten the host's or the pool's name", s.ClaimKind, s.PoolKind, s.Pool, s.Claim, len(s.Claim), validation.DNS1123SubdomainMaxLength)
	return true
}

// Ensure makes sure the host has one claim on each pool and returns, pool by
// pool, its address or why there is none yet. It records the claims it
// creates in writes, and does not create again a claim there that the cache
// does not show yet. It returns an error only when the API server does.
func (c *Claims) Ensure(ctx context.Context, host *bmov1alpha1.BareMetalHost, pools []string, writes *expectations.Writes,
) ([]PoolState, error) {
	states := make([]PoolState, 0, len(pools))
	for _, pool := range pools {
		state, err := c.ensureOne(ctx, host, pool, writes)
		if err != nil {
			return nil, err
		}
		states = append(states, state)
	}
	return states, nil
}

func (c *Claims) ensureOne(ctx context.Context, host *bmov1alpha1.BareMetalHost, poolName string, writes *expectations.Writes,
) (PoolState, error) {
	state := PoolState{Pool: poolName, Claim: ClaimName(host.Name, poolName), PoolKind: networkdata.Metal3PoolKind, ClaimKind: kindIPClaim}
	if state.nameTooLong() {
		return state, nil
	}

	pool, err := readPool(ctx, c.Client, client.ObjectKey{Namespace: host.Namespace, Name: poolName})
	if err != nil {
		if apierrors.IsNotFound(err) {
			return c.missingPool(ctx, host, state)
		}
		return state, fmt.Errorf("getting IPPool %s/%s: %w", host.Namespace, poolName, err)
	}

	claim := &ipamv1.IPClaim{}
	key := client.ObjectKey{Namespace: host.Namespace, Name: state.Claim}
	written := expectations.Key{Kind: kindIPClaim, NamespacedName: key, Host: host.UID}
	getErr := c.Client.Get(ctx, key, claim)
	switch {
	case apierrors.IsNotFound(getErr):
		if left, behind := writes.Behind(written, ""); behind {
			// The claim's own event brings the host back; the timeout
			// covers a claim deleted before the cache ever showed it.
			state.Waiting = fmt.Sprintf("IPClaim %q was created; waiting for it to show in the cache", state.Claim)
			state.RetryAfter = left
			return state, nil
		}
		fresh := newClaim(host, pool, state.Claim)
		if note, retried := c.retries.take(key, host.UID); retried {
			if err := setRetryNote(fresh, note); err != nil {
				return state, err
			}
		}
		if err := c.Client.Create(ctx, fresh); err != nil {
			if apierrors.IsAlreadyExists(err) {
				return c.claimOutsideCache(ctx, host, state)
			}
			return state, fmt.Errorf("creating IPClaim %s/%s: %w", host.Namespace, state.Claim, err)
		}
		writes.Wrote(written, "")
		state.Waiting = waitingForIPAM(pool, state.Claim)
		return state, nil
	case getErr != nil:
		return state, fmt.Errorf("getting IPClaim %s/%s: %w", host.Namespace, state.Claim, getErr)
	}
	writes.Forget(written)

	if !ownership.OwnedByHost(claim, host) {
		if ownership.HasStaleHostOwner(claim, host) {
			state.Waiting = fmt.Sprintf("IPClaim %q belongs to an earlier BareMetalHost named %q; waiting for the garbage collector to remove it",
				state.Claim, host.Name)
			return state, nil
		}
		return c.claimOfCAPM3(ctx, host, claim, state)
	}
	if !claim.DeletionTimestamp.IsZero() {
		state.Waiting = fmt.Sprintf("IPClaim %q is being deleted; a new one is created once it is gone", state.Claim)
		return state, nil
	}

	if claim.Status.Address == nil {
		if claim.Status.ErrorMessage != nil {
			return c.failedClaim(ctx, host, claim, pool, state)
		}
		state.Waiting = waitingForIPAM(pool, state.Claim)
		return state, nil
	}

	address := &ipamv1.IPAddress{}
	addressKey := client.ObjectKey{Namespace: host.Namespace, Name: claim.Status.Address.Name}
	if err := c.Client.Get(ctx, addressKey, address); err != nil {
		if apierrors.IsNotFound(err) {
			return c.addressMissing(ctx, host, claim, state)
		}
		return state, fmt.Errorf("getting IPAddress %s: %w", addressKey, err)
	}
	c.missing.found(claim.UID)
	state.Address, state.ClaimUID = addressOf(address), claim.UID
	return state, nil
}

// failedClaim handles a claim IPAM gave up on. IPAM never looks at such a
// claim again, so when IPAM would now give it an address (decideRetry) the
// claim is deleted, and the next reconcile makes a fresh one. It holds no
// address, so nothing is lost.
func (c *Claims) failedClaim(ctx context.Context, host *bmov1alpha1.BareMetalHost, claim *ipamv1.IPClaim, pool *ipamv1.IPPool,
	state PoolState,
) (PoolState, error) {
	usage, err := c.usage(ctx, pool)
	if err != nil {
		return state, err
	}
	turns, err := c.retryTurns(ctx, pool, usage)
	if err != nil {
		return state, err
	}
	if _, problem := readRetryNote(claim); problem != "" {
		ctrl.LoggerFrom(ctx).Info("Reading a hand-edited retry note", "claim", claim.Name, "problem", problem)
	}
	_, inTurn := turns.hostsByClaim[claim.Name]
	decision := decideRetry(claim, pool, usage, inTurn, c.clock().Now())
	switch {
	case decision.retry:
		if err := c.deleteToRetry(ctx, host, claim, decision.note); err != nil {
			return state, err
		}
		state.Waiting = fmt.Sprintf("IPPool %q has an address for IPClaim %q again (it failed: %s); retrying with a new claim",
			pool.Name, claim.Name, *claim.Status.ErrorMessage)
		return state, nil
	case decision.after > 0:
		state.Waiting = fmt.Sprintf("IPAM refused IPClaim %q (%s) although %s looks free in IPPool %q; trying again",
			claim.Name, *claim.Status.ErrorMessage, decision.note.Address, pool.Name)
		state.RetryAfter = decision.after
		return state, nil
	case decision.record:
		if err := recordPoolAddresses(ctx, c.Client, claim, usage.addresses); err != nil {
			return state, err
		}
	}
	state.Failed = fmt.Sprintf("IPAM could not allocate an address from IPPool %q for IPClaim %q: %s; "+
		"the claim is retried when the pool has a free address again (it grows, or one of its addresses is released)",
		pool.Name, claim.Name, *claim.Status.ErrorMessage)
	if decision.queued {
		state.Failed += "; older failed claims on the pool take the addresses that look free first"
		state.RetryAfter = turns.recheck
	}
	if decision.refused != "" {
		state.Failed += fmt.Sprintf("; %s looks free but IPAM refused it %d times: IPAM sees an address of the pool that "+
			"this manager does not (another shard's, or a Cluster API IPAddress)", decision.refused, retriesOfOneAddress)
	}
	return state, nil
}

// deleteToRetry deletes a failed claim, as read, and keeps the note for the
// claim made next.
func (c *Claims) deleteToRetry(ctx context.Context, host *bmov1alpha1.BareMetalHost, claim *ipamv1.IPClaim, note retryNote) error {
	if err := deleteFailed(ctx, c.Client, claim); err != nil {
		return fmt.Errorf("retrying: %w", err)
	}
	c.retries.put(claim, host.UID, note, c.clock().Now())
	return nil
}

// recordPoolAddresses writes on a failed claim how many IPAddresses its pool
// has now, when we first see the failure.
func recordPoolAddresses(ctx context.Context, c client.Client, claim *ipamv1.IPClaim, addresses int) error {
	original := claim.DeepCopy()
	if claim.Annotations == nil {
		claim.Annotations = map[string]string{}
	}
	claim.Annotations[preprovv1.PoolAddressesAnnotation] = strconv.Itoa(addresses)
	if err := c.Patch(ctx, claim, client.MergeFromWithOptions(original, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("recording the IPAddresses of IPPool %q on failed IPClaim %s/%s: %w",
			claim.Spec.Pool.Name, claim.Namespace, claim.Name, err)
	}
	return nil
}

func setRetryNote(claim *ipamv1.IPClaim, note retryNote) error {
	value, err := json.Marshal(note)
	if err != nil {
		return fmt.Errorf("writing the retry note of IPClaim %s/%s: %w", claim.Namespace, claim.Name, err)
	}
	claim.Annotations[preprovv1.RetryAnnotation] = string(value)
	return nil
}

func newClaim(host *bmov1alpha1.BareMetalHost, pool *ipamv1.IPPool, name string) *ipamv1.IPClaim {
	// Deliberately not CAPM3's data-name/pool-name labels: CAPM3 deletes
	// claims carrying them when it deprovisions.
	// The host's shard (--watch-filter) too, so that its manager's cache
	// sees the claim, and IPAM's IPAddress, which copies the claim's labels.
	claimLabels := ownership.WithHostShard(host, map[string]string{preprovv1.ManagedLabel: preprovv1.ManagedLabelValue})
	return &ipamv1.IPClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name:      name,
			Namespace: host.Namespace,
			Labels:    claimLabels,
			Annotations: map[string]string{
				preprovv1.PoolGenerationAnnotation: strconv.FormatInt(pool.Generation, 10),
			},
			OwnerReferences: []metav1.OwnerReference{ownership.HostOwnerReference(host)},
		},
		Spec: ipamv1.IPClaimSpec{
			Pool: corev1.ObjectReference{Name: pool.Name, Namespace: pool.Namespace},
		},
	}
}

func waitingForIPAM(pool *ipamv1.IPPool, claim string) string {
	if pool.Spec.ClusterName != nil && *pool.Spec.ClusterName != "" {
		return fmt.Sprintf("waiting for IPAM to allocate an address for IPClaim %q; IPPool %q has spec.clusterName %q and IPAM serves it "+
			"only once that Cluster exists: leave clusterName unset on pools used before a cluster exists",
			claim, pool.Name, *pool.Spec.ClusterName)
	}
	return fmt.Sprintf("waiting for IPAM to allocate an address for IPClaim %q from IPPool %q", claim, pool.Name)
}

func addressOf(address *ipamv1.IPAddress) *networkdata.Address {
	result := &networkdata.Address{
		IP:     string(address.Spec.Address),
		Prefix: address.Spec.Prefix,
	}
	if address.Spec.Gateway != nil {
		result.Gateway = string(*address.Spec.Gateway)
	}
	for _, server := range address.Spec.DNSServers {
		result.DNSServers = append(result.DNSServers, string(server))
	}
	return result
}
