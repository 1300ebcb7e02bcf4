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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	capipamv1 "sigs.k8s.io/cluster-api/api/ipam/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/internal/index"
	"github.com/capm3-preprov/capm3-preprov/internal/ownership"
	"github.com/capm3-preprov/capm3-preprov/networkdata"
)

// ReleaseUnusedClusterAPI deletes the host's IPAddressClaims on pools other
// than keep, and returns those it keeps for the host's machine, as
// ReleaseUnused does for IPClaims; the provider then releases the address.
// Each delete is fenced on the claim as decided on (deleteAsDecided). As
// with CAPM3's releaseAddressFromPool, deleting the claim is the whole
// release.
func (c *Claims) ReleaseUnusedClusterAPI(ctx context.Context, host *bmov1alpha1.BareMetalHost, keep []networkdata.Pool,
	users AddressUsers,
) ([]Held, error) {
	claims, err := c.addressClaimsOf(ctx, host)
	if err != nil {
		return nil, err
	}
	kept := func(claim *capipamv1.IPAddressClaim) bool {
		return slices.ContainsFunc(keep, func(pool networkdata.Pool) bool { return claimsPool(claim, pool) })
	}
	unused := func(ctx context.Context, claim *capipamv1.IPAddressClaim) (bool, error) {
		if !ownedForRelease(claim, host) || kept(claim) {
			return false, nil
		}
		referenced, err := c.clusterAPIAddressReferenced(ctx, claim, users.NetworkData)
		return !referenced, err
	}
	var held []Held
	for i := range claims.Items {
		if !ownedForRelease(&claims.Items[i], host) {
			continue
		}
		claim := claims.Items[i].DeepCopy()
		free, err := unused(ctx, claim)
		if err != nil {
			return nil, err
		}
		if !free {
			if clearErr := c.clearUnusedSince(ctx, claim); clearErr != nil {
				return nil, clearErr
			}
			continue
		}
		pool := networkdata.Pool{Name: claim.Spec.PoolRef.Name, APIGroup: claim.Spec.PoolRef.APIGroup, Kind: claim.Spec.PoolRef.Kind}
		hold, err := c.holdForMachine(ctx, claim, Held{Kind: kindIPAddressClaim, Claim: claim.Name, Pool: pool}, users)
		if err != nil {
			return nil, err
		}
		if hold != nil {
			held = append(held, *hold)
			continue
		}
		deleted, err := deleteAsDecided(ctx, c.Client, c.apiReader(), claim, unused)
		if err != nil {
			return nil, fmt.Errorf("releasing IPAddressClaim %s/%s the host no longer uses: %w", claim.Namespace, claim.Name, err)
		}
		if deleted {
			ctrl.LoggerFrom(ctx).Info("Released an IPAddressClaim the host's network data no longer uses", "claim", claim.Name,
				"pool", claim.Spec.PoolRef.Name, "kind", claim.Spec.PoolRef.Kind)
		}
	}
	return held, nil
}

// addressClaimsOf lists the IPAddressClaims the host may own, read without
// a copy and never changed (only the host's are copied): the host's claims
// are named after pools of any kind, so they are found by owner, through
// the cache's index in the manager (a Ready host's reconcile read every
// claim of ours in its namespace), and by our label from the API elsewhere
// (kubectl preprov), where no index exists.
func (c *Claims) addressClaimsOf(ctx context.Context, host *bmov1alpha1.BareMetalHost) (*capipamv1.IPAddressClaimList, error) {
	selection := client.ListOption(client.MatchingLabels{preprovv1.ManagedLabel: preprovv1.ManagedLabelValue})
	if c.Indexed {
		selection = client.MatchingFields{index.ClaimHostField: host.Name}
	}
	claims := &capipamv1.IPAddressClaimList{}
	if err := c.Client.List(ctx, claims, client.InNamespace(host.Namespace), client.UnsafeDisableDeepCopy, selection); err != nil {
		return nil, fmt.Errorf("listing our IPAddressClaims: %w", err)
	}
	return claims, nil
}

// clusterAPIAddressReferenced is whether the network data names the
// claim's address.
func (c *Claims) clusterAPIAddressReferenced(ctx context.Context, claim *capipamv1.IPAddressClaim, networkData []byte) (bool, error) {
	if claim.Status.AddressRef.Name == "" || len(networkData) == 0 {
		return false, nil
	}
	address := &capipamv1.IPAddress{}
	err := c.Client.Get(ctx, client.ObjectKey{Namespace: claim.Namespace, Name: claim.Status.AddressRef.Name}, address)
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("getting IPAddress %s/%s: %w", claim.Namespace, claim.Status.AddressRef.Name, err)
	}
	return networkDataNamesAddress(networkData, address.Spec.Address), nil
}

// MissingClusterAPI returns the Cluster API IPAM pools the host holds no
// claim of ours on.
func (c *Claims) MissingClusterAPI(ctx context.Context, host *bmov1alpha1.BareMetalHost, pools []networkdata.Pool) ([]string, error) {
	var missing []string
	for _, pool := range pools {
		claim := &capipamv1.IPAddressClaim{}
		key := client.ObjectKey{Namespace: host.Namespace, Name: ClaimName(host.Name, pool.Name)}
		err := c.Client.Get(ctx, key, claim)
		switch {
		case apierrors.IsNotFound(err):
			missing = append(missing, pool.String())
		case err != nil:
			return nil, fmt.Errorf("getting IPAddressClaim %s: %w", key, err)
		case !ownership.OwnedByHost(claim, host) || !claimsPool(claim, pool):
			missing = append(missing, pool.String())
		}
	}
	return missing, nil
}

// sweepAddressClaims deletes our IPAddressClaims whose hosts are gone, as
// sweepClaims does our IPClaims: the provider then releases the address.
func (s *Sweeper) sweepAddressClaims(ctx context.Context, namespace string) error {
	claims := &capipamv1.IPAddressClaimList{}
	if err := s.Client.List(ctx, claims, client.InNamespace(namespace),
		client.MatchingLabels{preprovv1.ManagedLabel: preprovv1.ManagedLabelValue}); err != nil {
		return fmt.Errorf("listing our IPAddressClaims: %w", err)
	}
	for i := range claims.Items {
		claim := &claims.Items[i]
		deleted, err := deleteAsDecided(ctx, s.Client, s.APIReader, claim, orphanedOf[*capipamv1.IPAddressClaim](s))
		if err != nil {
			return fmt.Errorf("deleting IPAddressClaim %s/%s of a deleted host: %w", claim.Namespace, claim.Name, err)
		}
		if deleted {
			ctrl.LoggerFrom(ctx).Info("Deleted the IPAddressClaim of a deleted host", "claim", client.ObjectKeyFromObject(claim))
		}
	}
	return nil
}
