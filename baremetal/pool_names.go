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
	"strings"

	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ReasonPoolNameShared is a host whose template takes addresses from a
// Cluster API IPAM pool named like a Metal3 IPPool of its namespace.
const ReasonPoolNameShared = "PreprovisioningPoolNameShared"

// refuseSharedPoolNames stops a host, before any claim is made, whose
// template takes addresses from a Cluster API IPAM pool that has the name of
// a Metal3 IPPool of the host's namespace. Metal3 IPAM serves every
// IPAddressClaim whose pool has the name of one of its IPPools, whatever the
// pool's kind (IPPoolReconciler.IPAddressClaimToIPPool and
// IPPoolManager.capiUpdateAddresses match spec.poolRef.name alone), so two
// providers would answer the host's claim, each with its own address.
func (m *HostManager) refuseSharedPoolNames(ctx context.Context, s *hostSetUp) (bool, Outcome, error) {
	var shared []string
	for _, pool := range s.clusterAPIPools {
		metal3Pool := &ipamv1.IPPool{}
		err := m.Client.Get(ctx, client.ObjectKey{Namespace: s.host.Namespace, Name: pool.Name}, metal3Pool)
		switch {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			return failed(fmt.Errorf("getting IPPool %s/%s: %w", s.host.Namespace, pool.Name, err))
		}
		shared = append(shared, fmt.Sprintf("%s and the Metal3 IPPool %q of namespace %q share a name: Metal3 IPAM serves "+
			"an IPAddressClaim by its pool's name whatever its kind, so it would answer the host's claim on %s too; "+
			"rename one of the two pools (and the template's reference to it)", pool, pool.Name, s.host.Namespace, pool))
	}
	if len(shared) == 0 {
		return goOn()
	}
	outcome := m.fail(ctx, s.host, PhaseFailed, s.governing.Ref, ReasonPoolNameShared, strings.Join(shared, "; "))
	outcome.Items = shared
	return stopAt(outcome)
}
