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

// Package ownership answers, the same way everywhere, whose an object is:
// which BareMetalHost or Metal3Data owns it (owner references), whether we
// created or set it up (our label), whether a host is handed to us (our
// pause) or held by somebody else, and whether Cluster API tells
// controllers to leave it alone.
//
// Layer: an internal/ leaf; it imports api/v1beta1 only.
package ownership

import (
	"slices"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	capm3 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	clusterctlv1 "sigs.k8s.io/cluster-api/cmd/clusterctl/api/v1alpha3"
	"sigs.k8s.io/cluster-api/util/annotations"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
)

const (
	kindHost       = "BareMetalHost"
	kindMetal3Data = "Metal3Data"
	kindIPClaim    = "IPClaim"
)

// HostOwnerReference is the non-controller owner reference that ties our
// claims and Secrets to their host, so they go when the host goes. Not a
// controller reference: BMO watches Secrets through their owner references
// and CAPM3 adds its own owners to a claim.
func HostOwnerReference(host *bmov1alpha1.BareMetalHost) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion: bmov1alpha1.GroupVersion.String(),
		Kind:       kindHost,
		Name:       host.Name,
		UID:        host.UID,
	}
}

// Metal3DataOwnerReference is the non-controller owner reference that hands
// a claim over to CAPM3's Metal3Data.
func Metal3DataOwnerReference(data *capm3.Metal3Data) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion: capm3.GroupVersion.String(),
		Kind:       kindMetal3Data,
		Name:       data.Name,
		UID:        data.UID,
	}
}

// IsHost is true for a reference to a BareMetalHost of any version of
// BMO's group.
func IsHost(ref metav1.OwnerReference) bool {
	return ref.Kind == kindHost && group(ref) == bmov1alpha1.GroupVersion.Group
}

// IsMetal3Data is true for a reference to a Metal3Data of any version of
// CAPM3's group.
func IsMetal3Data(ref metav1.OwnerReference) bool {
	return ref.Kind == kindMetal3Data && group(ref) == capm3.GroupVersion.Group
}

// OwnedByIPClaim is true for an object with an owner reference to the
// Metal3 IPAM IPClaim of that name, whatever its UID.
func OwnedByIPClaim(obj metav1.Object, claimName string) bool {
	return slices.ContainsFunc(obj.GetOwnerReferences(), func(ref metav1.OwnerReference) bool {
		return ref.Kind == kindIPClaim && ref.Name == claimName && group(ref) == ipamv1.GroupVersion.Group
	})
}

func group(ref metav1.OwnerReference) string {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return ""
	}
	return gv.Group
}

// OwnedByHost is true for an object this host owns. The UID tells it from
// an earlier host of the same name.
func OwnedByHost(obj metav1.Object, host *bmov1alpha1.BareMetalHost) bool {
	return slices.ContainsFunc(obj.GetOwnerReferences(), func(ref metav1.OwnerReference) bool {
		return IsHost(ref) && ref.UID == host.UID
	})
}

// HasStaleHostOwner is true for an object owned by an earlier host of the
// same name, which the garbage collector is about to remove.
func HasStaleHostOwner(obj metav1.Object, host *bmov1alpha1.BareMetalHost) bool {
	return slices.ContainsFunc(obj.GetOwnerReferences(), func(ref metav1.OwnerReference) bool {
		return IsHost(ref) && ref.Name == host.Name && ref.UID != host.UID
	})
}

// HostOwners returns the names of the hosts that own the object.
func HostOwners(obj metav1.Object) []string {
	var hosts []string
	for _, ref := range obj.GetOwnerReferences() {
		if IsHost(ref) {
			hosts = append(hosts, ref.Name)
		}
	}
	return hosts
}

// Metal3DataOwners returns the object's owner references to CAPM3's
// Metal3Data.
func Metal3DataOwners(obj metav1.Object) []metav1.OwnerReference {
	var owners []metav1.OwnerReference
	for _, ref := range obj.GetOwnerReferences() {
		if IsMetal3Data(ref) {
			owners = append(owners, ref)
		}
	}
	return owners
}

// UsedByCAPM3 is true for an object a Metal3Data owns: CAPM3 renders a
// provisioned host's addresses from such a claim.
func UsedByCAPM3(obj metav1.Object) bool {
	return slices.ContainsFunc(obj.GetOwnerReferences(), IsMetal3Data)
}

// Ours is true for an object that carries our label: a Secret or claim we
// created, a host we set up.
func Ours(obj metav1.Object) bool {
	return obj.GetLabels()[preprovv1.ManagedLabel] == preprovv1.ManagedLabelValue
}

// WithHostShard adds the host's shard, its cluster.x-k8s.io/watch-filter
// label (--watch-filter), to the labels of an object we make for the host,
// so the manager of that shard caches it, and returns them.
func WithHostShard(host *bmov1alpha1.BareMetalHost, objLabels map[string]string) map[string]string {
	if shard, ok := host.Labels[clusterv1.WatchLabel]; ok {
		objLabels[clusterv1.WatchLabel] = shard
	}
	return objLabels
}

// PausedForUs is true for a host paused with our value: it is handed to us
// and BMO does nothing with it until we remove that pause.
func PausedForUs(host metav1.Object) bool {
	return host.GetAnnotations()[preprovv1.PausedAnnotation] == preprovv1.PausedForPreprovisioning
}

// PausedBySomeoneElse is true for a host paused with a value that is not
// ours (CAPM3, clusterctl move, a user): a signal to keep our hands off.
func PausedBySomeoneElse(host metav1.Object) bool {
	value, paused := host.GetAnnotations()[preprovv1.PausedAnnotation]
	return paused && value != preprovv1.PausedForPreprovisioning
}

// kindMetal3Machine is the kind of CAPM3's consumer of a host.
const kindMetal3Machine = "Metal3Machine"

// ConsumedByMetal3Machine is true for a host that CAPM3's Metal3Machine
// consumes (spec.consumerRef, which CAPM3 sets when it associates a host).
func ConsumedByMetal3Machine(host *bmov1alpha1.BareMetalHost) bool {
	ref := host.Spec.ConsumerRef
	return ref != nil && ref.Kind == kindMetal3Machine &&
		group(metav1.OwnerReference{APIVersion: ref.APIVersion}) == capm3.GroupVersion.Group
}

// ConsumedByOthers is true for a host consumed by something other than
// CAPM3: BMO's HostClaim, or any consumer of a user's own. No Metal3Data
// ever renders its addresses, so there is nothing to hand over, and
// nothing but its claims marks the addresses its OS may run on.
func ConsumedByOthers(host *bmov1alpha1.BareMetalHost) bool {
	return host.Spec.ConsumerRef != nil && !ConsumedByMetal3Machine(host)
}

// PausedOrMoving is true for an object Cluster API tells controllers to
// leave alone, as CAPI providers' ResourceNotPaused predicate does:
//   - cluster.x-k8s.io/paused, set by a user to hold reconciliation;
//   - clusterctl.cluster.x-k8s.io/delete-for-move, which `clusterctl move`
//     puts on every object it has copied to the target, right before it
//     deletes it from the source. A source controller still running would
//     otherwise see its hosts' claims and Secret go, and create them again.
func PausedOrMoving(obj metav1.Object) bool {
	_, moving := obj.GetAnnotations()[clusterctlv1.DeleteForMoveAnnotation]
	return moving || annotations.HasPaused(obj)
}
