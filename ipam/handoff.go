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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capm3-preprov/capm3-preprov/internal/index"
	"github.com/capm3-preprov/capm3-preprov/internal/ownership"
)

// Handoff hands a host's claims over to CAPM3 when the host is provisioned.
// CAPM3 renders a Metal3Data's addresses from an existing "<bmh>-<pool>"
// claim only once that claim has an owner reference with the Metal3Data's
// UID (it compares nothing else); until then it waits, silently. So each of
// our claims gets a non-controller owner reference to the host's current
// Metal3Data, and loses references to Metal3Data that are gone (a
// re-provisioned host's Metal3Data often has the same name and a new UID).
type Handoff struct {
	Client client.Client
	// APIReader reads past the cache, so a Metal3Data created a moment ago
	// is never taken for gone.
	APIReader client.Reader
}

// Reconcile brings the Metal3Data owner references of the host's claims up
// to date. It writes nothing when they already are. It tells what stops
// the handoff when only a user can unblock it.
func (h *Handoff) Reconcile(ctx context.Context, host *bmov1alpha1.BareMetalHost) (HandoffResult, error) {
	if ownership.PausedBySomeoneElse(host) {
		// CAPM3 pauses a host (metal3.io/capm3) while its Cluster is
		// paused, as clusterctl move pauses it for the whole move: the
		// host is held, and every path of ours leaves it alone. The
		// host's update that lifts the pause brings it back.
		ctrl.LoggerFrom(ctx).V(1).Info("Host is paused by someone else; leaving its claims alone",
			"paused", host.Annotations[bmov1alpha1.PausedAnnotation])
		return HandoffResult{}, nil
	}
	if ownership.ConsumedByOthers(host) {
		// No Metal3Data is coming: the claims stay the host's alone.
		return HandoffResult{}, nil
	}
	claims, err := h.claimsOf(ctx, host)
	if err != nil || len(claims) == 0 {
		return HandoffResult{}, err
	}
	current, err := h.currentData(ctx, host)
	if err != nil {
		return HandoffResult{}, err
	}
	var result HandoffResult
	if len(current) == 0 {
		if result, err = h.dataOutsideShard(ctx, host); err != nil {
			return result, err
		}
	}
	for i := range claims {
		if err := h.updateOwners(ctx, &claims[i], current); err != nil {
			return result, err
		}
	}
	return result, nil
}

// claimsOf returns the live claims of ours the host owns: what there is to
// hand over.
func (h *Handoff) claimsOf(ctx context.Context, host *bmov1alpha1.BareMetalHost) ([]ipamv1.IPClaim, error) {
	list := &ipamv1.IPClaimList{}
	if err := h.Client.List(ctx, list, client.InNamespace(host.Namespace),
		client.MatchingFields{index.ClaimHostField: host.Name}); err != nil {
		return nil, fmt.Errorf("listing the IPClaims of BareMetalHost %s/%s: %w", host.Namespace, host.Name, err)
	}
	claims := list.Items[:0]
	for _, claim := range list.Items {
		if ownership.Ours(&claim) && ownership.OwnedByHost(&claim, host) && claim.DeletionTimestamp.IsZero() {
			claims = append(claims, claim)
		}
	}
	return claims, nil
}

// currentData returns the Metal3Data of the host's consumer, when the host
// is consumed by a Metal3Machine.
func (h *Handoff) currentData(ctx context.Context, host *bmov1alpha1.BareMetalHost) ([]capm3.Metal3Data, error) {
	if !ownership.ConsumedByMetal3Machine(host) {
		return nil, nil
	}
	consumer := host.Spec.ConsumerRef
	data := &capm3.Metal3DataList{}
	if err := h.Client.List(ctx, data, client.InNamespace(host.Namespace),
		client.MatchingFields{index.Metal3DataClaimField: consumer.Name}); err != nil {
		return nil, fmt.Errorf("listing the Metal3Data of Metal3Machine %s/%s: %w", host.Namespace, consumer.Name, err)
	}
	live := data.Items[:0]
	for _, item := range data.Items {
		if item.DeletionTimestamp.IsZero() {
			live = append(live, item)
		}
	}
	return live, nil
}

func (h *Handoff) updateOwners(ctx context.Context, claim *ipamv1.IPClaim, current []capm3.Metal3Data) error {
	wanted := make([]metav1.OwnerReference, 0, len(claim.OwnerReferences)+len(current))
	changed := false
	for _, ref := range claim.OwnerReferences {
		if !ownership.IsMetal3Data(ref) || slices.ContainsFunc(current, func(d capm3.Metal3Data) bool { return d.UID == ref.UID }) {
			wanted = append(wanted, ref)
			continue
		}
		gone, err := h.dataGone(ctx, claim.Namespace, ref)
		if err != nil {
			return err
		}
		if gone {
			changed = true
			continue
		}
		wanted = append(wanted, ref)
	}
	for _, data := range current {
		if !slices.ContainsFunc(wanted, func(ref metav1.OwnerReference) bool { return ref.UID == data.UID }) {
			wanted = append(wanted, ownership.Metal3DataOwnerReference(&data))
			changed = true
		}
	}
	if !changed {
		return nil
	}
	original := claim.DeepCopy()
	claim.OwnerReferences = wanted
	if err := h.Client.Patch(ctx, claim, client.MergeFromWithOptions(original, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("updating the Metal3Data owners of IPClaim %s/%s: %w", claim.Namespace, claim.Name, err)
	}
	ctrl.LoggerFrom(ctx).Info("Handed IPClaim over to CAPM3", "claim", claim.Name, "metal3Data", dataNames(current))
	return nil
}

// dataGone checks with the API server whether the Metal3Data a reference
// names no longer exists (or was recreated with another UID).
func (h *Handoff) dataGone(ctx context.Context, namespace string, ref metav1.OwnerReference) (bool, error) {
	data := &capm3.Metal3Data{}
	err := h.APIReader.Get(ctx, types.NamespacedName{Namespace: namespace, Name: ref.Name}, data)
	switch {
	case apierrors.IsNotFound(err):
		return true, nil
	case err != nil:
		return false, fmt.Errorf("getting Metal3Data %s/%s: %w", namespace, ref.Name, err)
	}
	return data.UID != ref.UID, nil
}

func dataNames(data []capm3.Metal3Data) []string {
	names := make([]string, 0, len(data))
	for _, item := range data {
		names = append(names, item.Name)
	}
	return names
}
