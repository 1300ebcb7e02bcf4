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
	"errors"
	"fmt"
	"sync"

	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// AddressCounts counts each IPPool's IPAddresses as the manager's cache
// sees them, kept up to date by the cache's events. Every claim we make
// records its pool's count (PoolAddressesAnnotation); counting by listing
// would copy every IPAddress of the namespace for every claim, which at
// thousands of hosts was most of the manager's CPU and memory.
type AddressCounts struct {
	mu     sync.RWMutex
	counts map[client.ObjectKey]int
	// synced reports whether the cache's events so far have all been
	// counted.
	synced func() bool
}

// CountAddresses follows the IPAddresses of the cache from now on.
func CountAddresses(ctx context.Context, informers cache.Informers) (*AddressCounts, error) {
	informer, err := informers.GetInformer(ctx, &ipamv1.IPAddress{})
	if err != nil {
		return nil, fmt.Errorf("getting the cache's IPAddress informer: %w", err)
	}
	counts := &AddressCounts{counts: map[client.ObjectKey]int{}}
	registration, err := informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: counts.added, UpdateFunc: counts.updated, DeleteFunc: counts.deleted,
	})
	if err != nil {
		return nil, fmt.Errorf("following the cache's IPAddresses: %w", err)
	}
	counts.synced = registration.HasSynced
	return counts, nil
}

func (a *AddressCounts) added(obj any) { a.add(obj, 1) }

func (a *AddressCounts) updated(oldObj, newObj any) {
	a.add(oldObj, -1)
	a.add(newObj, 1)
}

// deleted also takes the last state of an address whose deletion the cache
// missed.
func (a *AddressCounts) deleted(obj any) {
	if tombstone, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	a.add(obj, -1)
}

func (a *AddressCounts) add(obj any, delta int) {
	address, ok := obj.(*ipamv1.IPAddress)
	if !ok {
		return
	}
	pool := client.ObjectKey{Namespace: address.Namespace, Name: address.Spec.Pool.Name}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.counts[pool] += delta; a.counts[pool] <= 0 {
		delete(a.counts, pool)
	}
}

// PoolAddresses is how many IPAddresses the pool has, once the cache's
// IPAddresses have all been counted (right after the manager's start).
func (a *AddressCounts) PoolAddresses(ctx context.Context, pool client.ObjectKey) (int, error) {
	if !a.synced() && !toolscache.WaitForCacheSync(ctx.Done(), a.synced) {
		return 0, errors.Join(errors.New("counting the IPAddresses of the cache"), ctx.Err())
	}
	a.mu.RLock()
	defer a.mu.RUnlock()
	return a.counts[pool], nil
}
