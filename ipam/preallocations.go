package ipam

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// PreallocatedForAnnotation lists, on an IPPool, the spec.preAllocations
// keys we wrote (a JSON list), so we only ever remove our own entries.
const PreallocatedForAnnotation = "preprovisioning.metal3.io/preallocations"

// Preallocations is the optional backstop: it records each host's address
// in its pool's spec.preAllocations under the claim name, so IPAM hands the
// same address to a claim of that name even if the claim is recreated, and
// removes the entry once the host is gone.
type Preallocations struct {
	Client client.Client
	// APIReader checks hosts past the cache before an entry is removed.
	APIReader client.Reader
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

// Sweep removes the entries we wrote for hosts that no longer exist, in one
// namespace or, with "", in all. It is run when a host is deleted and when
// the manager starts, so an entry is not left behind even if the host was
// deleted while the manager was down.
func (p *Preallocations) Sweep(ctx context.Context, namespace string) error {
	pools := &ipamv1.IPPoolList{}
	if err := p.Client.List(ctx, pools, client.InNamespace(namespace)); err != nil {
		return fmt.Errorf("listing IPPools: %w", err)
	}
	for i := range pools.Items {
		if err := p.sweepPool(ctx, &pools.Items[i]); err != nil {
			return err
		}
	}
	return nil
}

func (p *Preallocations) sweepPool(ctx context.Context, pool *ipamv1.IPPool) error {
	keys := ownKeys(pool)
	if len(keys) == 0 {
		return nil
	}
	kept := make([]string, 0, len(keys))
	for _, key := range keys {
		gone, err := p.hostGone(ctx, pool.Namespace, strings.TrimSuffix(key, "-"+pool.Name))
		if err != nil {
			return err
		}
		if !gone {
			kept = append(kept, key)
		}
	}
	if len(kept) == len(keys) {
		return nil
	}
	original := pool.DeepCopy()
	for _, key := range keys {
		if !slices.Contains(kept, key) {
			delete(pool.Spec.PreAllocations, key)
		}
	}
	if err := setOwnKeys(pool, kept); err != nil {
		return err
	}
	if err := p.Client.Patch(ctx, pool, client.MergeFromWithOptions(original, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("removing entries of deleted hosts from IPPool %s/%s: %w", pool.Namespace, pool.Name, err)
	}
	return nil
}

func (p *Preallocations) hostGone(ctx context.Context, namespace, name string) (bool, error) {
	err := p.APIReader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &bmov1alpha1.BareMetalHost{})
	if apierrors.IsNotFound(err) {
		return true, nil
	}
	return false, err
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
