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
	"sync"
	"time"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capm3-preprov/capm3-preprov/internal/ownership"
)

// MissingAddressTimeout is how long a claim may point at an IPAddress that
// is not there before it is made again. IPAM creates the address before it
// points the claim at it, so a cache that lags shows this for a moment only.
const MissingAddressTimeout = 30 * time.Second

// addressMissing handles a claim that points at an IPAddress the cache does
// not have. IPAM hands an address left behind a claim, unchanged, to a new
// claim of the same name (createAddress): when a sweep releases that
// address in the same moment, the new claim points at an address that is
// gone for good, and IPAM never looks at a claim with an address again. So
// once the address has been missing for MissingAddressTimeout, and the API
// confirms it, the claim is deleted (as read) to be made again.
func (c *Claims) addressMissing(ctx context.Context, host *bmov1alpha1.BareMetalHost, claim *ipamv1.IPClaim, state PoolState,
) (PoolState, error) {
	addressKey := client.ObjectKey{Namespace: claim.Namespace, Name: claim.Status.Address.Name}
	state.Waiting = fmt.Sprintf("IPClaim %q points at IPAddress %q, which is not there yet", state.Claim, addressKey.Name)
	if left := c.missing.left(claim.UID, c.clock().Now()); left > 0 {
		state.RetryAfter = left
		return state, nil
	}
	err := c.apiReader().Get(ctx, addressKey, &ipamv1.IPAddress{})
	switch {
	case err == nil:
		// Only our cache lags.
		state.RetryAfter = MissingAddressTimeout
		return state, nil
	case !apierrors.IsNotFound(err):
		return state, fmt.Errorf("getting IPAddress %s: %w", addressKey, err)
	case ownership.UsedByCAPM3(claim):
		state.Waiting = ""
		state.Failed = fmt.Sprintf("IPClaim %q points at IPAddress %q, which is gone; CAPM3 uses the claim (a Metal3Data owns it), "+
			"so it is not made again: deprovision the machine, or delete the claim to have a new address allocated", state.Claim, addressKey.Name)
		return state, nil
	}
	uid, version := claim.UID, claim.ResourceVersion
	if err := client.IgnoreNotFound(c.Client.Delete(ctx, claim, client.Preconditions{UID: &uid, ResourceVersion: &version})); err != nil {
		return state, fmt.Errorf("deleting IPClaim %s/%s, whose IPAddress is gone, to make it again: %w", claim.Namespace, claim.Name, err)
	}
	c.missing.found(claim.UID)
	state.Remade = fmt.Sprintf("IPClaim %q pointed at IPAddress %q for over %s, and the address is gone (released while IPAM "+
		"handed it to the claim); the claim is made again", state.Claim, addressKey.Name, MissingAddressTimeout)
	state.Waiting = state.Remade
	ctrl.LoggerFrom(ctx).Info("Made an IPClaim again whose IPAddress is gone", "claim", claim.Name, "address", addressKey.Name,
		"host", host.Name)
	return state, nil
}

// missingAddresses remembers since when each claim points at a missing
// IPAddress. A restart starts the time again.
type missingAddresses struct {
	mu      sync.Mutex
	byClaim map[types.UID]time.Time
}

// left is how long the claim may still point at a missing address.
func (m *missingAddresses) left(claim types.UID, now time.Time) time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.byClaim == nil {
		m.byClaim = map[types.UID]time.Time{}
	}
	since, seen := m.byClaim[claim]
	if !seen {
		m.byClaim[claim] = now
		return MissingAddressTimeout
	}
	return MissingAddressTimeout - now.Sub(since)
}

// found forgets a claim whose address is there, or that is gone.
func (m *missingAddresses) found(claim types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.byClaim, claim)
}

func (c *Claims) clock() clock.PassiveClock {
	if c.Clock == nil {
		return clock.RealClock{}
	}
	return c.Clock
}
