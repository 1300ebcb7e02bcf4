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

package baremetal

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/internal/ownership"
	"github.com/capm3-preprov/capm3-preprov/ipam"
	"github.com/capm3-preprov/capm3-preprov/networkdata"
)

// releaseUnused releases the host's claims on pools other than pools and
// clusterAPIPools, and the addresses IPAM left behind claims released while
// it allocated them, unless users still use them (the host's Secret names
// them, or its machine may still run with them: the claims it keeps for
// that are returned), and the pool entries the backstop wrote for what it
// releases.
func (m *HostManager) releaseUnused(ctx context.Context, host *bmov1alpha1.BareMetalHost, pools []string,
	clusterAPIPools []networkdata.Pool, users ipam.AddressUsers,
) ([]ipam.Held, error) {
	held, err := m.Claims.ReleaseUnused(ctx, host, pools, users)
	if err != nil {
		return nil, err
	}
	clusterAPIHeld, err := m.Claims.ReleaseUnusedClusterAPI(ctx, host, clusterAPIPools, users)
	if err != nil {
		return nil, err
	}
	held = append(held, clusterAPIHeld...)
	keep := slices.Clone(pools)
	for _, claim := range held {
		if claim.Pool.Metal3() {
			keep = append(keep, claim.Pool.Name)
		}
	}
	if err := m.Claims.ReleaseLeftBehind(ctx, host, keep, users); err != nil || m.Preallocations == nil {
		return held, err
	}
	return held, m.Preallocations.RemoveUnused(ctx, host, keep, users.NetworkData)
}

// addressUsers are what may still use the host's addresses besides its
// claims: the network data its Secret holds, and its machine. A machine the
// cached host shows without a use is asked about again from the API before
// a claim goes: the cache may not show yet a deprovisioning that booted the
// ramdisk with the old data.
func (m *HostManager) addressUsers(ctx context.Context, host *bmov1alpha1.BareMetalHost, secret *corev1.Secret) ipam.AddressUsers {
	users := ipam.AddressUsers{Machine: func(since time.Time) (bool, string) {
		use := MachineUseSince(host, since)
		if use.InUse {
			return true, use.Until
		}
		fresh := &bmov1alpha1.BareMetalHost{}
		if err := m.apiReader().Get(ctx, client.ObjectKeyFromObject(host), fresh); err != nil {
			if apierrors.IsNotFound(err) {
				return false, ""
			}
			return true, fmt.Sprintf("the host could not be read to tell whether its machine still uses this address (%v): "+
				"it is looked at again on the host's next reconcile", err)
		}
		use = MachineUseSince(fresh, since)
		return use.InUse, use.Until
	}}
	if secret != nil {
		users.NetworkData = secret.Data[preprovv1.NetworkDataKey]
	}
	return users
}

// releaseBeforeSetUp gives back what a host still paused for us claimed when
// no single template selects it any more (a conflict, its template gone):
// no machine ever ran with it.
// A host we pointed at a Secret keeps its claims: its Secret may name them.
func (m *HostManager) releaseBeforeSetUp(ctx context.Context, host *bmov1alpha1.BareMetalHost) error {
	if !ownership.PausedForUs(host) || host.Spec.PreprovisioningNetworkDataName != "" {
		// Its claims stay, but not the failed ones: they hold no address,
		// and each would hold a retry turn its host never takes.
		return m.Claims.ReleaseFailed(ctx, host, nil)
	}
	_, err := m.releaseUnused(ctx, host, nil, nil, m.addressUsers(ctx, host, nil))
	return err
}

// ReasonPreallocationsPoolFull is the Warning of a host whose address a pool
// is too large to record (--pool-preallocations): the pool should be
// sharded.
const ReasonPreallocationsPoolFull = "PreprovisioningPoolPreallocationsFull"

// ReasonIPClaimRemade is the Warning of a host whose claim pointed at an
// IPAddress that is gone and was made again.
const ReasonIPClaimRemade = "PreprovisioningIPClaimRemade"

// reportRemade reports a claim made again, once: the next claim has
// another UID.
func (m *HostManager) reportRemade(host *bmov1alpha1.BareMetalHost, state ipam.PoolState) {
	if state.Remade != "" {
		m.event(host, corev1.EventTypeWarning, ReasonIPClaimRemade, state.Remade)
	}
}

// driftWithoutClaims reports drift, without claiming anything, for a
// provisioned host whose Secret is left as it is while its template now
// takes addresses from pools it holds no claim on: nothing would use them.
func (m *HostManager) driftWithoutClaims(ctx context.Context, s *hostSetUp) (bool, Outcome, error) {
	host, secret, governing := s.host, s.secret, s.governing
	if secret == nil || !isProvisioned(host) || governing.UpdateProvisionedHosts || rerenderRequested(host) {
		return goOn()
	}
	missing, err := m.missingPools(ctx, s)
	if err != nil {
		return failed(err)
	}
	if len(missing) == 0 {
		return goOn()
	}
	message := fmt.Sprintf("%s now takes addresses from %s, which the host holds none from, but the host is %s: "+
		"its Secret %q is left as it is and no address is claimed (annotate the host %s=true to re-render it once, or set "+
		"provisionedHostPolicy: Update on a Metal3PreprovisioningTemplate to change provisioned hosts)",
		governing.Ref, strings.Join(missing, ", "), host.Status.Provisioning.State, secret.Name, preprovv1.RerenderAnnotation)
	return stopAt(Outcome{Phase: PhaseDrifted, Template: governing.Ref, Message: message,
		EventType: corev1.EventTypeNormal, Reason: ReasonNetworkDataDrift})
}

// missingPools names the pools of the plan the host holds no claim on.
func (m *HostManager) missingPools(ctx context.Context, s *hostSetUp) ([]string, error) {
	missing, err := m.Claims.Missing(ctx, s.host, s.pools)
	if err != nil {
		return nil, err
	}
	for i, pool := range missing {
		missing[i] = networkdata.Pool{Name: pool, Kind: networkdata.Metal3PoolKind}.String()
	}
	clusterAPIMissing, err := m.Claims.MissingClusterAPI(ctx, s.host, s.clusterAPIPools)
	return append(missing, clusterAPIMissing...), err
}

// CAPM3NameCollisionMessage is the Warning for a host named like another
// host's Metal3Data.
func CAPM3NameCollisionMessage(hostName, dataName string) string {
	return fmt.Sprintf("Metal3Data %q of another host is named like this host: CAPM3 looks up the IPClaim <Metal3Data>-<pool> "+
		"before <host>-<pool>, so it takes this host's IPClaims %q-<pool> for that Metal3Data's and waits on them; "+
		"rename this host so that it does not look like <Metal3DataTemplate>-<number> (CAPM3 names Metal3Data "+
		"<Metal3DataTemplate>-<index>)", dataName, hostName)
}
