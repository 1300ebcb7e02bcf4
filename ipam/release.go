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
	"fmt"
	"slices"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capm3-preprov/capm3-preprov/internal/ownership"
)

// ReleaseUnused deletes the host's claims on pools other than keep, so IPAM
// releases their addresses. A claim is kept while
// networkData (what the host's Secret holds; nil when it has none) still
// names its address, and while CAPM3 uses it (a Metal3Data owns it).
func (c *Claims) ReleaseUnused(ctx context.Context, host *bmov1alpha1.BareMetalHost, keep []string, networkData []byte,
) error {
	// Claims are named after their pool: the pools of the namespace find
	// them, with the cache's index or without.
	pools := &ipamv1.IPPoolList{}
	if err := c.Client.List(ctx, pools, client.InNamespace(host.Namespace)); err != nil {
		return fmt.Errorf("listing IPPools: %w", err)
	}
	for _, pool := range pools.Items {
		if slices.Contains(keep, pool.Name) {
			continue
		}
		claim := &ipamv1.IPClaim{}
		err := c.Client.Get(ctx, client.ObjectKey{Namespace: host.Namespace, Name: ClaimName(host.Name, pool.Name)}, claim)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("getting IPClaim %s/%s: %w", host.Namespace, ClaimName(host.Name, pool.Name), err)
		}
		if !ownership.Ours(claim) || !ownership.OwnedByHost(claim, host) || !claim.DeletionTimestamp.IsZero() ||
			slices.Contains(keep, claim.Spec.Pool.Name) || ownership.UsedByCAPM3(claim) {
			continue
		}
		referenced, err := c.addressReferenced(ctx, claim, networkData)
		if err != nil {
			return err
		}
		if referenced {
			continue
		}
		if err := client.IgnoreNotFound(c.Client.Delete(ctx, claim, client.Preconditions{UID: &claim.UID})); err != nil {
			return fmt.Errorf("releasing IPClaim %s/%s the host no longer uses: %w", claim.Namespace, claim.Name, err)
		}
		ctrl.LoggerFrom(ctx).Info("Released an IPClaim the host's network data no longer uses", "claim", claim.Name)
	}
	return nil
}

// addressReferenced is whether the network data names the claim's address.
func (c *Claims) addressReferenced(ctx context.Context, claim *ipamv1.IPClaim, networkData []byte) (bool, error) {
	if claim.Status.Address == nil || len(networkData) == 0 {
		return false, nil
	}
	address := &ipamv1.IPAddress{}
	err := c.Client.Get(ctx, client.ObjectKey{Namespace: claim.Namespace, Name: claim.Status.Address.Name}, address)
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("getting IPAddress %s/%s: %w", claim.Namespace, claim.Status.Address.Name, err)
	}
	return bytes.Contains(networkData, []byte(`"`+string(address.Spec.Address)+`"`)), nil
}

// Missing returns the pools the host holds no claim of ours on.
func (c *Claims) Missing(ctx context.Context, host *bmov1alpha1.BareMetalHost, pools []string) ([]string, error) {
	var missing []string
	for _, pool := range pools {
		claim := &ipamv1.IPClaim{}
		err := c.Client.Get(ctx, client.ObjectKey{Namespace: host.Namespace, Name: ClaimName(host.Name, pool)}, claim)
		switch {
		case apierrors.IsNotFound(err):
			missing = append(missing, pool)
		case err != nil:
			return nil, fmt.Errorf("getting IPClaim %s/%s: %w", host.Namespace, ClaimName(host.Name, pool), err)
		case !ownership.OwnedByHost(claim, host):
			missing = append(missing, pool)
		}
	}
	return missing, nil
}
