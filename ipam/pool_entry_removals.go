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
	"maps"
	"slices"

	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// entryRemoval is the removal of a deleted host's entry.
type entryRemoval struct{}

func (entryRemoval) queueName() string { return "pool-entry-removals" }

// Start removes the queued entries until ctx ends: one pool at a time,
// each in one write. A failed write keeps its entries queued and is
// retried with the controllers' backoff; the start-up sweep catches what a
// manager that stopped meanwhile left.
func (s *Sweeper) Start(ctx context.Context) error {
	return s.removals.run(ctx, func(ctx context.Context, pool client.ObjectKey, removals map[string]entryRemoval) error {
		return s.removeEntries(ctx, pool, slices.Sorted(maps.Keys(removals)))
	})
}

// removeEntries removes, in one write, those of keys that are entries of
// ours in the pool and whose hosts are gone. The write is fenced on the
// pool as read (an optimistic lock): Metal3 IPAM writes the pool's status
// on every allocation, so a write that lost the race reads the pool again
// from the API, at once, and decides again.
func (s *Sweeper) removeEntries(ctx context.Context, poolKey client.ObjectKey, keys []string) error {
	if len(keys) == 0 {
		return nil
	}
	pool := &ipamv1.IPPool{}
	if err := s.Client.Get(ctx, poolKey, pool); err != nil {
		return client.IgnoreNotFound(err)
	}
	for attempt := 1; ; attempt++ {
		err := s.removeEntriesOfGoneHosts(ctx, pool, oursAmong(pool, keys))
		if !apierrors.IsConflict(err) || attempt == fencedAttempts {
			return err
		}
		fresh := &ipamv1.IPPool{}
		if err := s.APIReader.Get(ctx, poolKey, fresh); err != nil {
			return client.IgnoreNotFound(fmt.Errorf("reading IPPool %s again: %w", poolKey, err))
		}
		pool = fresh
	}
}

// oursAmong are those of keys the pool holds as entries of ours.
func oursAmong(pool *ipamv1.IPPool, keys []string) []string {
	ours := sets.New(ownKeys(pool)...)
	var among []string
	for _, key := range keys {
		if _, entry := pool.Spec.PreAllocations[key]; entry && ours.Has(key) {
			among = append(among, key)
		}
	}
	return among
}
