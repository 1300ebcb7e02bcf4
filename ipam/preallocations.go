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

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// PreallocatedForAnnotation lists, on an IPPool, the spec.preAllocations
// keys we wrote (a JSON list), so we only ever remove our own entries.
const PreallocatedForAnnotation = "preprovisioning.metal3.io/preallocations"

// Preallocations is the optional backstop: it records each host's address
// in its pool's spec.preAllocations under the claim name, so IPAM hands the
// same address to a claim of that name even if the claim is recreated, and
// removes the entry once the host is gone (see Sweeper).
type Preallocations struct {
	Client client.Client
}

// Ensure records the addresses of the host's ready claims. It writes a pool
// only when its entry is missing or different.
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
		keys := ownKeys(pool)
		if pool.Spec.PreAllocations[state.Claim] == ip && slices.Contains(keys, state.Claim) {
			continue
		}
		original := pool.DeepCopy()
		if pool.Spec.PreAllocations == nil {
			pool.Spec.PreAllocations = map[string]ipamv1.IPAddressStr{}
		}
		pool.Spec.PreAllocations[state.Claim] = ip
		if !slices.Contains(keys, state.Claim) {
			keys = append(keys, state.Claim)
		}
		if err := setOwnKeys(pool, keys); err != nil {
			return err
		}
		if err := p.Client.Patch(ctx, pool, client.MergeFromWithOptions(original, client.MergeFromWithOptimisticLock{})); err != nil {
			return fmt.Errorf("recording %s in IPPool %s/%s spec.preAllocations: %w", ip, pool.Namespace, pool.Name, err)
		}
	}
	return nil
}

func ownKeys(pool *ipamv1.IPPool) []string {
	var keys []string
	if value := pool.Annotations[PreallocatedForAnnotation]; value != "" {
		// A value we cannot read is treated as empty: we then remove nothing.
		_ = json.Unmarshal([]byte(value), &keys)
	}
	return keys
}

func setOwnKeys(pool *ipamv1.IPPool, keys []string) error {
	if len(keys) == 0 {
		delete(pool.Annotations, PreallocatedForAnnotation)
		return nil
	}
	slices.Sort(keys)
	value, err := json.Marshal(keys)
	if err != nil {
		return err
	}
	if pool.Annotations == nil {
		pool.Annotations = map[string]string{}
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
		keys := ownKeys(pool)
		if slices.Contains(keep, pool.Name) || !slices.Contains(keys, claimName) ||
			bytes.Contains(networkData, []byte(`"`+string(pool.Spec.PreAllocations[claimName])+`"`)) {
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
