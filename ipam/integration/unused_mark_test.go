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

package integration

import (
	"context"
	"testing"
	"time"

	capm3 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/internal/ownership"
	"github.com/capm3-preprov/capm3-preprov/ipam"
	"github.com/capm3-preprov/capm3-preprov/test/framework/fixtures"
)

// A claim whose address the host's network data names again loses its
// unused-since mark, though CAPM3's Metal3Data co-owns it: a stale mark
// would date the change before a later boot of the ramdisk with that very
// address, and the claim would go while the ramdisk runs with it. Found by
// the soak (seed 3, step 669).
func TestAClaimNamedAgainLosesItsUnusedMarkWhileCAPM3HoldsIt(t *testing.T) {
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "unused-mark-"}}
	require.NoError(t, k8sClient.Create(ctx, ns))
	host := fixtures.Host(ns.Name, "node-0", "52:54:00:aa:bb:01", nil)
	require.NoError(t, k8sClient.Create(ctx, host))
	require.NoError(t, k8sClient.Create(ctx, fixtures.Pool(ns.Name, "pool", "192.0.2.10", "192.0.2.20", "192.0.2.1")))
	data := metav1.OwnerReference{APIVersion: capm3.GroupVersion.String(), Kind: "Metal3Data", Name: "pooled-0", UID: "a-metal3data"}
	createManagedClaims(t, ns.Name, map[string][]metav1.OwnerReference{"node-0-pool": {ownership.HostOwnerReference(host), data}})
	claim := &ipamv1.IPClaim{}
	key := client.ObjectKey{Namespace: ns.Name, Name: "node-0-pool"}
	require.NoError(t, k8sClient.Get(ctx, key, claim))
	original := claim.DeepCopy()
	claim.Annotations = map[string]string{preprovv1.UnusedSinceAnnotation: time.Now().UTC().Format(time.RFC3339)}
	require.NoError(t, k8sClient.Patch(ctx, claim, client.MergeFrom(original)))

	claims := &ipam.Claims{Client: k8sClient}
	_, err := claims.ReleaseUnused(ctx, host, []string{"pool"}, ipam.AddressUsers{})
	require.NoError(t, err)
	require.NoError(t, k8sClient.Get(ctx, key, claim))
	assert.NotContains(t, claim.Annotations, preprovv1.UnusedSinceAnnotation)
}
