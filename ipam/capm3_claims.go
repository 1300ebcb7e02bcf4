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
	"slices"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	capm3 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capm3-preprov/capm3-preprov/internal/ownership"
)

// claimOfCAPM3 handles a "<host>-<pool>" claim that is not the host's.
// CAPM3 (DataManager.ensureM3IPClaim in baremetal/metal3data_manager.go)
// looks up "<metal3data>-<pool>", then "<bmh>-<pool>", and with
// --enable-bmh-name-based-preallocation creates "<bmh>-<pool>" itself, owned
// by the Metal3Data. So a claim owned by the Metal3Data of the host's own
// consumer is the host's address: it is reused, with the host added as a
// non-controller owner. A claim owned by another Metal3Data is the claim of
// another host whose Metal3Data ("<datatemplate>-<index>") is named like
// this host: a name collision only a rename resolves.
func (c *Claims) claimOfCAPM3(ctx context.Context, host *bmov1alpha1.BareMetalHost, claim *ipamv1.IPClaim,
	state PoolState,
) (PoolState, error) {
	dataOwners := ownership.Metal3DataOwners(claim)
	if len(dataOwners) == 0 {
		state.Failed = fmt.Sprintf("IPClaim %q exists but was not created for this host (it has no owner reference to BareMetalHost %q): "+
			"delete it, or add this host as its owner to hand the address over", state.Claim, host.Name)
		return state, nil
	}
	hostData, err := c.consumerData(ctx, host)
	if err != nil {
		return state, err
	}
	if !slices.ContainsFunc(dataOwners, func(ref metav1.OwnerReference) bool { return slices.Contains(hostData, ref.UID) }) {
		state.Failed = fmt.Sprintf("IPClaim %q belongs to CAPM3's Metal3Data %q of another host: CAPM3 names Metal3Data "+
			"<Metal3DataTemplate>-<index> and looks up the claim <Metal3Data>-<pool> before <host>-<pool>, so this host's name %q "+
			"meets another host's Metal3Data; rename the host so that it does not look like <Metal3DataTemplate>-<number>",
			state.Claim, dataOwners[0].Name, host.Name)
		return state, nil
	}
	original := claim.DeepCopy()
	claim.OwnerReferences = append(claim.OwnerReferences, ownership.HostOwnerReference(host))
	if err := c.Client.Patch(ctx, claim, client.MergeFromWithOptions(original, client.MergeFromWithOptimisticLock{})); err != nil {
		return state, fmt.Errorf("adding BareMetalHost %s as an owner of CAPM3's IPClaim %s/%s: %w", host.Name, claim.Namespace, claim.Name, err)
	}
	ctrl.LoggerFrom(ctx).Info("Reusing the address of CAPM3's IPClaim of this host", "claim", claim.Name)
	state.Waiting = fmt.Sprintf("reusing the address of CAPM3's IPClaim %q; reading it again", state.Claim)
	return state, nil
}

// consumerData returns the UIDs of the Metal3Data of the host's consumer
// (CAPM3 names the Metal3DataClaim like the Metal3Machine).
func (c *Claims) consumerData(ctx context.Context, host *bmov1alpha1.BareMetalHost) ([]types.UID, error) {
	if !ownership.ConsumedByMetal3Machine(host) {
		return nil, nil
	}
	consumer := host.Spec.ConsumerRef
	data := &capm3.Metal3DataList{}
	if err := c.Client.List(ctx, data, client.InNamespace(host.Namespace)); err != nil {
		return nil, fmt.Errorf("listing Metal3Data in %q: %w", host.Namespace, err)
	}
	var uids []types.UID
	for _, item := range data.Items {
		if item.Spec.Claim != nil && item.Spec.Claim.Name == consumer.Name {
			uids = append(uids, item.UID)
		}
	}
	return uids, nil
}

// CollidingData returns the name of a Metal3Data of another host that is
// named like this host, or "": CAPM3 would take this host's claims
// ("<host>-<pool>") for that Metal3Data's ("<metal3data>-<pool>") and wait
// on them forever.
func (c *Claims) CollidingData(ctx context.Context, host *bmov1alpha1.BareMetalHost) (string, error) {
	data := &capm3.Metal3Data{}
	err := c.Client.Get(ctx, client.ObjectKey{Namespace: host.Namespace, Name: host.Name}, data)
	if err != nil {
		return "", client.IgnoreNotFound(err)
	}
	consumer := host.Spec.ConsumerRef
	if consumer != nil && data.Spec.Claim != nil && data.Spec.Claim.Name == consumer.Name {
		return "", nil
	}
	return data.Name, nil
}
