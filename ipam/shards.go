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
	"time"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	capm3 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	capipamv1 "sigs.k8s.io/cluster-api/api/ipam/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capm3-preprov/capm3-preprov/internal/ownership"
)

// A manager started with --watch-filter caches only the objects labelled
// cluster.x-k8s.io/watch-filter with its shard, as Cluster API's managers
// do (CAPI's util/predicates ResourceHasFilterLabel). An object a host
// needs that lacks the label is invisible to the manager of the host's
// shard: it looks absent from the cache though the API server has it. The
// functions below ask the API server when the cache says "absent" to a
// sharded host, and turn the silence into a message naming the label and
// the fix.

// sameShard is true when both objects carry the same watch-filter label, or
// neither does.
func sameShard(a, b metav1.Object) bool {
	valueA, labelledA := a.GetLabels()[clusterv1.WatchLabel]
	valueB, labelledB := b.GetLabels()[clusterv1.WatchLabel]
	return labelledA == labelledB && valueA == valueB
}

// shardOf says which shard an object's watch-filter label puts it in.
func shardOf(obj metav1.Object) string {
	value, labelled := obj.GetLabels()[clusterv1.WatchLabel]
	if !labelled {
		return "no " + clusterv1.WatchLabel + " label"
	}
	return fmt.Sprintf("%s=%s", clusterv1.WatchLabel, value)
}

// metadataOf reads the metadata of a Metal3 IPAM object from the API server.
func metadataOf(ctx context.Context, reader client.Reader, kind string, key client.ObjectKey) (*metav1.PartialObjectMetadata, error) {
	return metadataOfKind(ctx, reader, ipamv1.GroupVersion.WithKind(kind), key)
}

// metadataOfKind reads an object's metadata from the API server.
func metadataOfKind(ctx context.Context, reader client.Reader, gvk schema.GroupVersionKind, key client.ObjectKey,
) (*metav1.PartialObjectMetadata, error) {
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(gvk)
	return obj, reader.Get(ctx, key, obj)
}

// missingPool reports a pool the cache does not hold: absent, or, for a
// host of a shard, present without the shard's label.
func (c *Claims) missingPool(ctx context.Context, host *bmov1alpha1.BareMetalHost, state PoolState) (PoolState, error) {
	state.Failed = fmt.Sprintf("IPPool %q does not exist in namespace %q: create it, or fix the pool name in the template "+
		"(IPClaims only work with a pool in the host's namespace)", state.Pool, host.Namespace)
	if _, sharded := host.Labels[clusterv1.WatchLabel]; !sharded {
		return state, nil
	}
	pool, err := metadataOf(ctx, c.apiReader(), "IPPool", client.ObjectKey{Namespace: host.Namespace, Name: state.Pool})
	switch {
	case apierrors.IsNotFound(err):
		return state, nil
	case err != nil:
		return state, fmt.Errorf("getting IPPool %s/%s: %w", host.Namespace, state.Pool, err)
	}
	state.Failed = fmt.Sprintf("IPPool %q exists, but the host is in shard %s and the pool has %s: a manager started with "+
		"--watch-filter sees only the objects of its shard. Label the pool %s=%s (a pool serves the hosts of one shard)",
		state.Pool, shardOf(host), shardOf(pool), clusterv1.WatchLabel, host.Labels[clusterv1.WatchLabel])
	return state, nil
}

// claimOutsideCache handles a claim whose creation was refused because it
// exists, though the cache does not show it: created a moment ago, or in
// another shard than the host's (the host moved to this shard, its claims
// did not), which this manager never sees.
func (c *Claims) claimOutsideCache(ctx context.Context, host *bmov1alpha1.BareMetalHost, state PoolState) (PoolState, error) {
	gvk := ipamv1.GroupVersion.WithKind(kindIPClaim)
	if state.ClaimKind == kindIPAddressClaim {
		gvk = capipamv1.GroupVersion.WithKind(kindIPAddressClaim)
	}
	state.Waiting = fmt.Sprintf("%s %q was created concurrently; reading it again", state.ClaimKind, state.Claim)
	claim, err := metadataOfKind(ctx, c.apiReader(), gvk, client.ObjectKey{Namespace: host.Namespace, Name: state.Claim})
	switch {
	case apierrors.IsNotFound(err):
		return state, nil
	case err != nil:
		return state, fmt.Errorf("getting %s %s/%s: %w", state.ClaimKind, host.Namespace, state.Claim, err)
	}
	if sameShard(host, claim) {
		return state, nil
	}
	state.Waiting = ""
	state.Failed = fmt.Sprintf("%s %q exists, but the host is in shard %s and the claim has %s: a manager started with "+
		"--watch-filter sees only the objects of its shard. Label the host's %ss, their IPAddresses and its network data "+
		"Secret like the host, or give the host back the label of their shard", state.ClaimKind, state.Claim, shardOf(host), shardOf(claim),
		state.ClaimKind)
	return state, nil
}

// HandoffResult is what stops a handoff that only a user can unblock.
type HandoffResult struct {
	// OutsideShard is the Warning for a Metal3Data of the host's consumer
	// that this manager does not see, being in another shard.
	OutsideShard string
	// RetryAfter, when set, is when to look for the host's Metal3Data
	// again: the event of a Metal3Data outside the shard never comes.
	RetryAfter time.Duration
}

// unseenDataRetry is how often a sharded host that CAPM3 provisions looks
// for a Metal3Data its cache does not show; CAPM3 too retries a Metal3Data
// that waits for a claim every 30 seconds.
const unseenDataRetry = 30 * time.Second

// dataOutsideShard looks past the cache for the Metal3Data of a sharded
// host's Metal3Machine when the cache shows none. One that lacks the
// host's shard label is never seen by this manager: the handoff would
// never happen, and CAPM3 would wait for the claims forever. While none
// exists yet, the host looks again until it is provisioned (a Metal3Machine
// without a data template has none).
func (h *Handoff) dataOutsideShard(ctx context.Context, host *bmov1alpha1.BareMetalHost) (HandoffResult, error) {
	if _, sharded := host.Labels[clusterv1.WatchLabel]; !sharded || !ownership.ConsumedByMetal3Machine(host) ||
		host.Status.Provisioning.State == bmov1alpha1.StateProvisioned {
		return HandoffResult{}, nil
	}
	consumer := host.Spec.ConsumerRef.Name
	data, err := h.renderedData(ctx, host.Namespace, consumer)
	switch {
	case err != nil:
		return HandoffResult{}, err
	case data == nil:
		return HandoffResult{RetryAfter: unseenDataRetry}, nil
	case !data.DeletionTimestamp.IsZero() || sameShard(host, data):
		// The cache catches up, or CAPM3 renders it again; their events
		// bring the host back.
		return HandoffResult{}, nil
	}
	return HandoffResult{OutsideShard: fmt.Sprintf("Metal3Data %q of Metal3Machine %q has %s, but the host is in shard %s: "+
		"a manager started with --watch-filter sees only the objects of its shard, so the host's IPClaims are not handed "+
		"over and CAPM3 waits for them. Label the shard's Machines %s=%s (CAPM3 gives a Metal3Data the labels of its "+
		"Metal3DataClaim, which has its Machine's: for a MachineDeployment, spec.template.metadata.labels), or label this Metal3Data",
		data.Name, consumer, shardOf(data), shardOf(host), clusterv1.WatchLabel, host.Labels[clusterv1.WatchLabel])}, nil
}

// renderedData reads from the API server the metadata of the Metal3Data
// CAPM3 rendered for a Metal3Machine, or nil while there is none: two reads
// however many Metal3Data the namespace holds. The Metal3DataClaim is named
// like the Metal3Machine, and CAPM3's DataTemplateManager.createData names
// the Metal3Data in its status.renderedData.
func (h *Handoff) renderedData(ctx context.Context, namespace, machine string) (*metav1.PartialObjectMetadata, error) {
	claim := &capm3.Metal3DataClaim{}
	err := h.APIReader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: machine}, claim)
	if apierrors.IsNotFound(err) || (err == nil && claim.Status.RenderedData == nil) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("getting Metal3DataClaim %s/%s: %w", namespace, machine, err)
	}
	data := &metav1.PartialObjectMetadata{}
	data.SetGroupVersionKind(capm3.GroupVersion.WithKind("Metal3Data"))
	key := client.ObjectKey{Namespace: namespace, Name: claim.Status.RenderedData.Name}
	if err = h.APIReader.Get(ctx, key, data); apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("getting Metal3Data %s/%s: %w", namespace, key.Name, err)
	}
	return data, nil
}
