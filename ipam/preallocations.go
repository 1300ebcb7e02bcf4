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
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
)

// PreallocatedForAnnotation is where earlier versions listed, on an IPPool,
// the spec.preAllocations keys they wrote (a JSON list). All annotations of
// an object together may not exceed 256 KiB, which the list reached at about
// 6,000 hosts per pool. Its keys still count as ours; the list only shrinks
// as they are removed and is never written anew.
const PreallocatedForAnnotation = "preprovisioning.metal3.io/preallocations"

// Preallocations is the optional backstop: it records each host's address
// in its pool's spec.preAllocations under the claim name, so IPAM hands the
// same address to a claim of that name even if the claim is recreated, and
// removes the entry once the host is gone (see Sweeper).
//
// Our entries are those the API server records as last set by
// preprovv1.PreallocationsFieldManager (the pool's metadata.managedFields):
// no list of ours grows with the pool, an entry someone else changes is no
// longer ours, and entries of different hosts are added by patches that
// cannot conflict, so a host costs one pool write.
type Preallocations struct {
	Client client.Client
}

// Ensure records the addresses of the host's ready claims. It writes a pool
// only when its entry is missing or different. An entry someone else wrote
// with the same address stays theirs.
func (p *Preallocations) Ensure(ctx context.Context, host *bmov1alpha1.BareMetalHost, states []PoolState) error {
	for _, state := range states {
		if state.Address == nil {
			continue
		}
		pool := &ipamv1.IPPool{}
		if err := p.Client.Get(ctx, client.ObjectKey{Namespace: host.Namespace, Name: state.Pool}, pool); err != nil {
			return fmt.Errorf("getting IPPool %s/%s: %w", host.Namespace, state.Pool, err)
		}
		ip := ipamv1.IPAddressStr(state.Address.IP)
		if pool.Spec.PreAllocations[state.Claim] == ip {
			continue
		}
		if err := p.record(ctx, pool, state.Claim, ip); err != nil {
			return err
		}
	}
	return nil
}

// record sets one entry with a merge patch of that entry alone and no
// resourceVersion: hosts writing their own entries of one pool at once
// never conflict, and the field manager makes the entry ours.
func (p *Preallocations) record(ctx context.Context, pool *ipamv1.IPPool, key string, ip ipamv1.IPAddressStr) error {
	entry := map[string]any{"spec": map[string]any{"preAllocations": map[string]ipamv1.IPAddressStr{key: ip}}}
	patch, err := json.Marshal(entry)
	if err != nil {
		return err
	}
	if err := p.Client.Patch(ctx, pool, client.RawPatch(types.MergePatchType, patch),
		client.FieldOwner(preprovv1.PreallocationsFieldManager)); err != nil {
		return fmt.Errorf("recording %s in IPPool %s/%s spec.preAllocations: %w", ip, pool.Namespace, pool.Name, err)
	}
	return nil
}

// ownKeys are the pool's spec.preAllocations keys we wrote: those our field
// manager set last, and those of the earlier versions' annotation. Reading
// them costs O(entries of the pool): call it only when a removal is likely.
func ownKeys(pool *ipamv1.IPPool) []string {
	keys := append(managedKeys(pool), legacyKeys(pool)...)
	slices.Sort(keys)
	return slices.Compact(keys)
}

// managedKeys are the spec.preAllocations keys the API server records as
// set by our field manager. A record we cannot read counts as none: we then
// remove nothing.
func managedKeys(pool *ipamv1.IPPool) []string {
	var keys []string
	for _, entry := range pool.ManagedFields {
		if entry.Manager != preprovv1.PreallocationsFieldManager || entry.Operation != metav1.ManagedFieldsOperationUpdate ||
			entry.Subresource != "" || entry.FieldsV1 == nil {
			continue
		}
		var fields struct {
			Spec struct {
				PreAllocations map[string]json.RawMessage `json:"f:preAllocations"`
			} `json:"f:spec"`
		}
		if json.Unmarshal(entry.FieldsV1.Raw, &fields) != nil {
			continue
		}
		for field := range fields.Spec.PreAllocations {
			if key, ok := strings.CutPrefix(field, "f:"); ok {
				keys = append(keys, key)
			}
		}
	}
	return keys
}

func legacyKeys(pool *ipamv1.IPPool) []string {
	var keys []string
	if value := pool.Annotations[PreallocatedForAnnotation]; value != "" {
		// A value we cannot read is treated as empty: we then remove nothing.
		_ = json.Unmarshal([]byte(value), &keys)
	}
	return keys
}

// setOwnKeys records, before a patch that removes our other entries, that
// keys are the ones of ours left. The API server drops a removed entry from
// our field manager's record itself; the earlier versions' annotation keeps
// only its keys among keys, and goes when none is left.
func setOwnKeys(pool *ipamv1.IPPool, keys []string) error {
	legacy := slices.DeleteFunc(legacyKeys(pool), func(key string) bool { return !slices.Contains(keys, key) })
	if len(legacy) == 0 {
		delete(pool.Annotations, PreallocatedForAnnotation)
		return nil
	}
	value, err := json.Marshal(legacy)
	if err != nil {
		return err
	}
	pool.Annotations[PreallocatedForAnnotation] = string(value)
	return nil
}

// RemoveUnused drops the entries we wrote for the host on pools other than
// keep, unless networkData (what its Secret holds) still names the address.
func (p *Preallocations) RemoveUnused(ctx context.Context, host *bmov1alpha1.BareMetalHost, keep []string, networkData []byte) error {
	pools := &ipamv1.IPPoolList{}
	if err := p.Client.List(ctx, pools, client.InNamespace(host.Namespace)); err != nil {
		return fmt.Errorf("listing IPPools: %w", err)
	}
	for i := range pools.Items {
		pool := &pools.Items[i]
		claimName := ClaimName(host.Name, pool.Name)
		ip, present := pool.Spec.PreAllocations[claimName]
		if !present || slices.Contains(keep, pool.Name) || bytes.Contains(networkData, []byte(`"`+string(ip)+`"`)) {
			continue
		}
		keys := ownKeys(pool)
		if !slices.Contains(keys, claimName) {
			continue
		}
		original := pool.DeepCopy()
		delete(pool.Spec.PreAllocations, claimName)
		if err := setOwnKeys(pool, slices.DeleteFunc(keys, func(key string) bool { return key == claimName })); err != nil {
			return err
		}
		if err := p.Client.Patch(ctx, pool, client.MergeFromWithOptions(original, client.MergeFromWithOptimisticLock{})); err != nil {
			return fmt.Errorf("removing %s from IPPool %s/%s spec.preAllocations: %w", claimName, pool.Namespace, pool.Name, err)
		}
	}
	return nil
}
