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

package ipamstandin_test

import (
	"context"
	"testing"
	"time"

	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	capipamv1 "sigs.k8s.io/cluster-api/api/ipam/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capm3-preprov/capm3-preprov/test/framework"
	"github.com/capm3-preprov/capm3-preprov/test/framework/fixtures"
	"github.com/capm3-preprov/capm3-preprov/test/standins/ipamstandin"
)

// What Metal3 IPAM's IPPoolReconciler does with a pool: the stand-in must
// do the same, or the tests built on it prove nothing about the real thing.
func TestPoolsAsIPAMServesThem(t *testing.T) {
	env, err := framework.StartControlPlane(framework.StartControlPlaneInput{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = env.Stop() })
	ctx := context.Background()
	newNamespace := func() string {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "standin-"}}
		require.NoError(t, env.Client.Create(ctx, ns))
		return ns.Name
	}
	serve := func(pool *ipamv1.IPPool) ctrl.Result {
		r := &ipamstandin.Reconciler{Client: env.Client}
		result, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(pool)})
		require.NoError(t, err)
		return result
	}
	claimOf := func(claim *ipamv1.IPClaim) *ipamv1.IPClaim {
		require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(claim), claim))
		return claim
	}

	// IsPaused: a paused pool of an existing Cluster is left alone and
	// looked at again later; the Cluster's own pause counts too.
	t.Run("a paused pool of a Cluster is not served until the pause ends", func(t *testing.T) {
		ns := newNamespace()
		cluster := &clusterv1.Cluster{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "c1"},
			Spec:       clusterv1.ClusterSpec{Paused: ptr.To(false)},
		}
		require.NoError(t, env.Client.Create(ctx, cluster))
		pool := fixtures.Pool(ns, "pool", "192.0.2.10", "192.0.2.20", "192.0.2.1")
		pool.Spec.ClusterName = ptr.To("c1")
		pool.Annotations = map[string]string{clusterv1.PausedAnnotation: ""}
		claim := newClaim(ns, "host-pool")
		require.NoError(t, env.Client.Create(ctx, pool))
		require.NoError(t, env.Client.Create(ctx, claim))

		assert.Equal(t, ctrl.Result{RequeueAfter: 30 * time.Second}, serve(pool))
		assert.Nil(t, claimOf(claim).Status.Address, "IPAM serves no claim of a paused pool of a Cluster")

		original := pool.DeepCopy()
		delete(pool.Annotations, clusterv1.PausedAnnotation)
		require.NoError(t, env.Client.Patch(ctx, pool, client.MergeFrom(original)))
		assert.Equal(t, ctrl.Result{}, serve(pool))
		assert.NotNil(t, claimOf(claim).Status.Address, "the pause over, the claim is served")
	})

	// Reconcile checks the pause only with a Cluster: a claim's event
	// (not filtered, the claim is not paused) brings a paused pool without
	// one, and it is served.
	t.Run("a paused pool without a Cluster is served when a claim brings it", func(t *testing.T) {
		ns := newNamespace()
		pool := fixtures.Pool(ns, "pool", "192.0.2.10", "192.0.2.20", "192.0.2.1")
		pool.Annotations = map[string]string{clusterv1.PausedAnnotation: ""}
		claim := newClaim(ns, "host-pool")
		require.NoError(t, env.Client.Create(ctx, pool))
		require.NoError(t, env.Client.Create(ctx, claim))
		serve(pool)
		assert.NotNil(t, claimOf(claim).Status.Address)
	})

	// getIndexes: a Cluster API IPAddress whose poolRef names the pool
	// holds its address, whatever the poolRef's kind.
	t.Run("a Cluster API IPAddress of the pool's name holds its address", func(t *testing.T) {
		ns := newNamespace()
		pool := fixtures.Pool(ns, "pool", "192.0.2.10", "192.0.2.11", "192.0.2.1")
		held := &capipamv1.IPAddress{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "held"},
			Spec: capipamv1.IPAddressSpec{
				ClaimRef: capipamv1.IPAddressClaimReference{Name: "other-cluster-claim"},
				PoolRef:  capipamv1.IPPoolReference{APIGroup: "ipam.cluster.x-k8s.io", Kind: "InClusterIPPool", Name: "pool"},
				Address:  "192.0.2.10",
				Prefix:   ptr.To[int32](24),
			},
		}
		first, second := newClaim(ns, "a-pool"), newClaim(ns, "b-pool")
		for _, obj := range []client.Object{pool, held, first, second} {
			require.NoError(t, env.Client.Create(ctx, obj))
		}
		serve(pool)
		served, refused := claimOf(first), claimOf(second)
		require.NotNil(t, served.Status.Address)
		assert.Equal(t, "pool-192-0-2-11", served.Status.Address.Name)
		require.NotNil(t, refused.Status.ErrorMessage)
		assert.Equal(t, ipamstandin.ExhaustedMessage, *refused.Status.ErrorMessage)
	})
}
