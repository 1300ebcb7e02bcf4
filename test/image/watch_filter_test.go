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

package image

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/baremetal"
	"github.com/capm3-preprov/capm3-preprov/test/framework"
	"github.com/capm3-preprov/capm3-preprov/test/framework/fixtures"
)

// TestWatchFilter: two managers with --watch-filter shard-a and shard-b in
// one namespace each set up only the hosts of their shard, from the
// template and pool of their shard, and label what they create with it;
// a host of no shard is left alone.
func TestWatchFilter(t *testing.T) {
	ctx := context.Background()
	cp := controlPlane(t)
	ipam, err := framework.StartIPAMStandIn(cp.Config)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, ipam.Stop()) })
	c := cp.Client

	namespace := "shards"
	racked := map[string]string{"rack": "r1"}
	require.NoError(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}))
	hosts := map[string]string{"shard-a": "node-a", "shard-b": "node-b", "": "node-none"}
	for index, shard := range []string{"shard-a", "shard-b", ""} {
		hostName := hosts[shard]
		hostLabels := map[string]string{"rack": "r1"}
		if shard != "" {
			hostLabels[clusterv1.WatchLabel] = shard
		}
		host := fixtures.Host(namespace, hostName, fixtures.MAC(namespace, 0, index), hostLabels)
		require.NoError(t, c.Create(ctx, fixtures.BMCCredentials(host)))
		require.NoError(t, c.Create(ctx, host))
		if shard == "" {
			continue
		}
		// Each shard has its own template and pool; both templates select
		// every host of the rack, but each manager sees only its own.
		pool := fixtures.Pool(namespace, "pool-"+shard, "192.168.10.10", "192.168.10.20", "192.168.10.1")
		template := fixtures.PreprovisioningTemplate(namespace, "rack-"+shard, racked, fixtures.PoolNetworkData(pool.Name))
		for _, obj := range []client.Object{pool, template} {
			obj.SetLabels(map[string]string{clusterv1.WatchLabel: shard})
			require.NoError(t, c.Create(ctx, obj))
		}
	}

	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(kubeconfig, cp.KubeConfig, 0o600))
	for _, shard := range []string{"shard-a", "shard-b"} {
		manager := &framework.ManagerProcess{
			Name: "manager-" + shard, Binary: managerBinary, LogPath: filepath.Join(t.TempDir(), shard+".log"),
			Args: []string{"--kubeconfig=" + kubeconfig, "--webhook-port=0", "--watch-filter=" + shard},
		}
		t.Cleanup(func() {
			_ = manager.Kill()
			if t.Failed() {
				log, _ := os.ReadFile(manager.LogPath)
				t.Logf("%s log:\n%s", manager.Name, log)
			}
		})
		require.NoError(t, manager.Start())
	}

	for _, shard := range []string{"shard-a", "shard-b"} {
		host := &bmov1alpha1.BareMetalHost{}
		require.EventuallyWithT(t, func(collect *assert.CollectT) {
			require.NoError(collect, c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: hosts[shard]}, host))
			assert.NotContains(collect, host.Annotations, preprovv1.PausedAnnotation)
		}, time.Minute, time.Second, "the manager of %s did not set up %s", shard, hosts[shard])
		assert.Equal(t, "Metal3PreprovisioningTemplate/rack-"+shard, host.Annotations[preprovv1.TemplateAnnotation])

		secret := &corev1.Secret{}
		require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: baremetal.NetworkDataSecretName(hosts[shard])}, secret))
		assert.Equal(t, shard, secret.Labels[clusterv1.WatchLabel], "the Secret is not in its host's shard")
		claim := &ipamv1.IPClaim{}
		require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: hosts[shard] + "-pool-" + shard}, claim))
		assert.Equal(t, shard, claim.Labels[clusterv1.WatchLabel], "the IPClaim is not in its host's shard")
	}

	// Both managers have set up their hosts: the host of no shard, which
	// both templates select, was seen by neither.
	host := &bmov1alpha1.BareMetalHost{}
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: hosts[""]}, host))
	assert.Equal(t, preprovv1.PausedForPreprovisioning, host.Annotations[preprovv1.PausedAnnotation])
	assert.NotContains(t, host.Annotations, preprovv1.TemplateAnnotation)
	claims := &ipamv1.IPClaimList{}
	require.NoError(t, c.List(ctx, claims, client.InNamespace(namespace)))
	assert.Len(t, claims.Items, 2, "claims: one per host of a shard, none for the host of no shard")
}
