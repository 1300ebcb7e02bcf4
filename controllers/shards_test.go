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

package controllers

import (
	"context"
	"testing"

	capm3 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/baremetal"
	"github.com/capm3-preprov/capm3-preprov/test/framework"
	"github.com/capm3-preprov/capm3-preprov/test/framework/fixtures"
)

// startShardManager starts, beside the suite's manager (which leaves
// labelled objects alone), a manager with --watch-filter shard, wired as
// the binary wires it.
func startShardManager(t *testing.T, shard string) {
	t.Helper()
	startShardManagerWith(t, shard, Options{})
}

// startShardManagerWith starts a shard's manager with these options (the
// manager's other flags).
func startShardManagerWith(t *testing.T, shard string, opts Options) {
	t.Helper()
	mgr, err := ctrl.NewManager(testEnv.Config, ctrl.Options{
		Scheme:     testEnv.Scheme,
		Cache:      CacheOptions("", shard),
		Metrics:    metricsserver.Options{BindAddress: "0"},
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	_, err = setupControllers(ctx, mgr, opts)
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		assert.NoError(t, <-done)
	})
}

// relabel sets or, with "", removes an object's watch-filter label.
func relabel(t *testing.T, obj client.Object, shard string) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, k8sClient.Get(ctx, client.ObjectKeyFromObject(obj), obj))
	patch := client.MergeFrom(obj.DeepCopyObject().(client.Object))
	labels := obj.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[clusterv1.WatchLabel] = shard
	obj.SetLabels(labels)
	require.NoError(t, k8sClient.Patch(ctx, obj, patch))
}

// Shards that disagree say so. The manager of a shard (--watch-filter)
// sees only the objects labelled with it: a pool without the label, a
// claim of the host left in its former shard, a Metal3Data without the
// label would each stop the host without a word. Each gets a Warning that
// names the label and the fix, and the fix unblocks the host.
func TestShardsThatDisagreeSaySo(t *testing.T) {
	ns := newNamespace(t)
	shard := ns
	startShardManager(t, shard)
	ctx := context.Background()
	inShard := map[string]string{clusterv1.WatchLabel: shard, "rack": "r1"}
	template := fixtures.PreprovisioningTemplate(ns, "rack-r1", map[string]string{"rack": "r1"}, fixtures.PoolNetworkData("provisioning"))
	template.Labels = map[string]string{clusterv1.WatchLabel: shard}
	pool := fixtures.Pool(ns, "provisioning", "192.0.2.10", "192.0.2.20", "192.0.2.1")
	create(t, template, pool, fixtures.Host(ns, "node-0", "52:54:00:aa:bb:01", inShard))

	// The pool lacks the shard's label.
	note := waitForEvent(t, ns, "node-0", baremetal.ReasonIPClaimFailed)
	assert.Contains(t, note, `IPPool "provisioning" exists, but the host is in shard cluster.x-k8s.io/watch-filter=`+shard)
	assert.Contains(t, note, "Label the pool cluster.x-k8s.io/watch-filter="+shard)
	relabel(t, pool, shard)
	waitForNetworkData(t, ns, "node-0")

	// A host moved from another shard, its claim left there.
	moved := fixtures.Host(ns, "node-1", "52:54:00:aa:bb:02", map[string]string{clusterv1.WatchLabel: "elsewhere", "rack": "r1"})
	create(t, moved)
	claim := &ipamv1.IPClaim{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ns, Name: "node-1-provisioning",
			Labels: map[string]string{preprovv1.ManagedLabel: preprovv1.ManagedLabelValue, clusterv1.WatchLabel: "elsewhere"},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "metal3.io/v1alpha1", Kind: "BareMetalHost", Name: moved.Name, UID: moved.UID,
			}},
		},
		Spec: ipamv1.IPClaimSpec{Pool: corev1.ObjectReference{Name: "provisioning", Namespace: ns}},
	}
	create(t, claim)
	relabel(t, moved, shard)
	note = waitForEvent(t, ns, "node-1", baremetal.ReasonIPClaimFailed)
	assert.Contains(t, note, `IPClaim "node-1-provisioning" exists, but the host is in shard cluster.x-k8s.io/watch-filter=`+shard+
		" and the claim has cluster.x-k8s.io/watch-filter=elsewhere")
	// The fix: the claim and the IPAddress IPAM gave it (with the claim's
	// labels) follow the host.
	relabel(t, claim, shard)
	relabel(t, &ipamv1.IPAddress{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: claimOf(t, ns, claim.Name).Status.Address.Name}}, shard)
	waitForNetworkData(t, ns, "node-1")

	// CAPM3 provisions node-0; its Metal3Data lacks the shard's label.
	data := &capm3.Metal3Data{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "pooled-0"},
		Spec: capm3.Metal3DataSpec{
			Index: new(int32), Claim: &capm3.Metal3ObjectRef{Name: "node-0-machine"}, Template: &capm3.Metal3ObjectRef{Name: "pooled"},
		},
	}
	dataClaim := &capm3.Metal3DataClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "node-0-machine"},
		Spec:       capm3.Metal3DataClaimSpec{Template: &capm3.Metal3ObjectRef{Name: "pooled"}},
	}
	create(t, data, dataClaim)
	require.NoError(t, framework.NameRenderedData(ctx, k8sClient, dataClaim, data.Name))
	host := getHost(t, ns, "node-0")
	original := host.DeepCopy()
	host.Spec.ConsumerRef = &corev1.ObjectReference{
		APIVersion: capm3.GroupVersion.String(), Kind: "Metal3Machine", Namespace: ns, Name: "node-0-machine",
	}
	require.NoError(t, k8sClient.Patch(ctx, host, client.MergeFrom(original)))
	note = waitForEvent(t, ns, "node-0", ReasonShardMismatch)
	assert.Contains(t, note, `Metal3Data "pooled-0" of Metal3Machine "node-0-machine" has no cluster.x-k8s.io/watch-filter label`)
	assert.Contains(t, note, "Label the shard's Machines cluster.x-k8s.io/watch-filter="+shard)
	assert.Empty(t, metal3DataOwners(claimOf(t, ns, "node-0-provisioning")))
	relabel(t, data, shard)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Equal(c, []types.UID{data.UID}, metal3DataOwners(claimOf(c, ns, "node-0-provisioning")))
	}, waitTimeout, pollInterval)
}
