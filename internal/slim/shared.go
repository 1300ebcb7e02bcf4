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

package slim

import (
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unique"

	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// Each host brings two IPClaims, two IPAddresses and a Secret into the
// cache, and the decoder gives every one of them its own copy of what they
// all repeat: the namespace, our label, IPAM's finalizer, the owners'
// kinds, the pool's name and UID. Those copies were more than half of a
// cached claim (about 950 of 1,740 bytes). The transforms below keep one copy of each:
// strings are interned, and label and annotation maps equal to one already
// cached are replaced by it.
//
// Sharing is safe because nothing writes to a cached object: the cache's
// readers hand out deep copies, and the few lists read without one
// (client.UnsafeDisableDeepCopy) and the event handlers only read.

// Shared drops an object's managed fields and shares its metadata's
// repeated parts (see ShareMetadata): the transform of every cached type
// without one of its own.
func Shared(obj any) (any, error) {
	shareObject(obj)
	return obj, nil
}

// shareObject is Shared for the transforms that go on to the object's spec.
func shareObject(obj any) {
	if object, ok := obj.(metav1.Object); ok {
		// As controller-runtime's TransformStripManagedFields: an
		// unstructured object would gain an empty list.
		if object.GetManagedFields() != nil {
			object.SetManagedFields(nil)
		}
		ShareMetadata(object)
	}
	if object, ok := obj.(runtime.Object); ok {
		if typeMeta, ok := object.GetObjectKind().(*metav1.TypeMeta); ok {
			typeMeta.APIVersion, typeMeta.Kind = intern(typeMeta.APIVersion), intern(typeMeta.Kind)
		}
	}
}

// Claim is Shared for an IPClaim, with its pool and address references.
func Claim(obj any) (any, error) {
	claim, ok := obj.(*ipamv1.IPClaim)
	if !ok {
		return obj, nil
	}
	shareObject(claim)
	sharePoolReference(&claim.Spec.Pool)
	if claim.Status.Address != nil {
		shareReference(claim.Status.Address)
	}
	return claim, nil
}

// Address is Shared for an IPAddress, with its pool and claim references,
// gateway and DNS servers.
func Address(obj any) (any, error) {
	address, ok := obj.(*ipamv1.IPAddress)
	if !ok {
		return obj, nil
	}
	shareObject(address)
	sharePoolReference(&address.Spec.Pool)
	shareReference(&address.Spec.Claim)
	for i := range address.OwnerReferences {
		if owner := &address.OwnerReferences[i]; owner.Kind == "IPPool" {
			owner.Name, owner.UID = intern(owner.Name), types.UID(intern(string(owner.UID)))
		}
	}
	if address.Spec.Gateway != nil {
		*address.Spec.Gateway = ipamv1.IPAddressStr(intern(string(*address.Spec.Gateway)))
	}
	for i, server := range address.Spec.DNSServers {
		address.Spec.DNSServers[i] = ipamv1.IPAddressStr(intern(string(server)))
	}
	return address, nil
}

// ShareMetadata interns the parts of an object's metadata that many objects
// repeat, and replaces its labels and annotations by an equal cached map.
// Names and UIDs, its own and its owners', are left as they are: most are
// one object's or a few's, and interning a string costs the runtime a weak
// reference to it, more than a few copies do.
func ShareMetadata(object metav1.Object) {
	object.SetNamespace(intern(object.GetNamespace()))
	object.SetLabels(sharedMaps.share(object.GetLabels()))
	object.SetAnnotations(sharedMaps.share(object.GetAnnotations()))
	// Both slices are the object's own: their elements are replaced in place.
	finalizers := object.GetFinalizers()
	for i, finalizer := range finalizers {
		finalizers[i] = intern(finalizer)
	}
	owners := object.GetOwnerReferences()
	for i := range owners {
		owner := &owners[i]
		owner.APIVersion, owner.Kind = intern(owner.APIVersion), intern(owner.Kind)
	}
}

// shareReference interns what a reference shares with others of its kind;
// its name is one object's.
func shareReference(ref *corev1.ObjectReference) {
	ref.Namespace, ref.APIVersion, ref.Kind = intern(ref.Namespace), intern(ref.APIVersion), intern(ref.Kind)
}

// sharePoolReference interns a reference to a pool, which thousands of
// claims and addresses name.
func sharePoolReference(ref *corev1.ObjectReference) {
	shareReference(ref)
	ref.Name = intern(ref.Name)
}

// intern returns the one copy of s that every interned equal string shares;
// the runtime drops it once nothing refers to it.
func intern(s string) string {
	if s == "" {
		return s
	}
	return unique.Make(s).Value()
}

// sharedMaps holds one map of each label or annotation set it was shown.
var sharedMaps = mapTable{limit: 4096}

// mapTable finds, for a map, an equal one it holds. Objects come and go, and
// a table of every set ever seen would grow with them (each host's Secret
// names its host in an annotation): the table is emptied when it is full,
// so sets that keep recurring are back in it at once and the others go.
type mapTable struct {
	limit int

	mu        sync.Mutex
	byContent map[string]map[string]string
}

// maxSharedContent is the largest map, in bytes of keys and values, the
// table takes: large sets (a last-applied-configuration) are seldom
// repeated and would make the table's keys as large.
const maxSharedContent = 1024

// share returns the table's map equal to m, or m, now in the table.
func (t *mapTable) share(m map[string]string) map[string]string {
	key, ok := contentKey(m)
	if !ok {
		return m
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if shared, found := t.byContent[key]; found {
		return shared
	}
	if t.byContent == nil || len(t.byContent) >= t.limit {
		t.byContent = make(map[string]map[string]string, t.limit)
	}
	t.byContent[key] = m
	return m
}

// contentKey spells a map's entries, in the order of their keys, each
// string prefixed by its length so that no two maps spell alike; false for
// an empty map or one over maxSharedContent.
func contentKey(m map[string]string) (string, bool) {
	size := 0
	for k, v := range m {
		size += len(k) + len(v)
	}
	if len(m) == 0 || size > maxSharedContent {
		return "", false
	}
	// Label and annotation maps hold a few entries: sorted on the stack.
	keys := make([]string, 0, 8)
	keys = slices.AppendSeq(keys, maps.Keys(m))
	slices.Sort(keys)
	var key strings.Builder
	key.Grow(size + 8*len(m))
	for _, k := range keys {
		for _, s := range []string{k, m[k]} {
			key.WriteString(strconv.Itoa(len(s)))
			key.WriteByte(':')
			key.WriteString(s)
		}
	}
	return key.String(), true
}
