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
	"time"

	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	clusterctlv1 "sigs.k8s.io/cluster-api/cmd/clusterctl/api/v1alpha3"
	"sigs.k8s.io/controller-runtime/pkg/client"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/baremetal"
	"github.com/capm3-preprov/capm3-preprov/test/framework/fixtures"
)

// heldWindow is how long, after the barrier, the held hosts are watched
// for a late write: the reconciles the edits caused run beside the
// barrier's, in the same workers.
const heldWindow = 2 * time.Second

// Hosts that Cluster API holds (cluster.x-k8s.io/paused, or clusterctl's
// delete-for-move while a move deletes them from the source) are left
// alone whatever brings them up: their template's and pool's edits, a
// Metal3Data of their consumer (the handoff), the timed requeues. Neither
// the host, its Secret nor its claims are written, and a host still paused
// for us is not set up. Once the hold is lifted, the host catches up.
func TestHostsHeldByClusterAPIAreLeftAloneOnEveryPath(t *testing.T) {
	ns := newNamespace(t)
	ctx := context.Background()
	racked := map[string]string{"rack": "r1"}
	create(t,
		fixtures.Pool(ns, "provisioning", "192.0.2.10", "192.0.2.20", "192.0.2.1"),
		fixtures.PreprovisioningTemplate(ns, "rack-r1", racked, fixtures.PoolNetworkData("provisioning")),
		fixtures.Host(ns, "held", "52:54:00:aa:bb:01", racked),
		fixtures.Host(ns, "moving", "52:54:00:aa:bb:02", racked),
		fixtures.Host(ns, "control", "52:54:00:aa:bb:03", racked),
	)
	for _, host := range []string{"held", "moving", "control"} {
		waitForNetworkData(t, ns, host)
	}
	annotateHost(t, ns, "held", clusterv1.PausedAnnotation, "")
	annotateHost(t, ns, "moving", clusterctlv1.DeleteForMoveAnnotation, "")
	waiting := fixtures.Host(ns, "waiting", "52:54:00:aa:bb:04", racked)
	waiting.Annotations[clusterv1.PausedAnnotation] = ""
	create(t, waiting)
	before := map[string]string{}
	for _, name := range []string{"held", "moving"} {
		before["Secret "+name] = resourceVersion(t, &corev1.Secret{}, ns, baremetal.NetworkDataSecretName(name))
		before["IPClaim "+name] = claimOf(t, ns, name+"-provisioning").ResourceVersion
	}

	// CAPM3 provisions the held host and the control host: the handoff
	// starts from their Metal3Data.
	provisionedByCAPM3(t, ns, "held", "held-machine", "pooled-0")
	controlData := provisionedByCAPM3(t, ns, "control", "control-machine", "pooled-1")
	for _, name := range []string{"held", "moving", "waiting"} {
		before["BareMetalHost "+name] = getHost(t, ns, name).ResourceVersion
	}
	// The template and the pool change.
	template := getTemplate(t, ns, "rack-r1")
	original := template.DeepCopy()
	template.Spec.NetworkData.Links.Ethernets[0].MTU = 9000
	require.NoError(t, k8sClient.Patch(ctx, template, client.MergeFrom(original)))
	pool := &ipamv1.IPPool{}
	require.NoError(t, k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "provisioning"}, pool))
	originalPool := pool.DeepCopy()
	pool.Spec.Pools[0].End = ptr.To(ipamv1.IPAddressStr("192.0.2.30"))
	require.NoError(t, k8sClient.Patch(ctx, pool, client.MergeFrom(originalPool)))

	// The barrier: the control host went through the same edits.
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Equal(c, 9000, linkMTU(c, ns, "control"))
		assert.Equal(c, []types.UID{controlData.UID}, metal3DataOwners(claimOf(c, ns, "control-provisioning")))
	}, waitTimeout, pollInterval)
	assert.Never(t, func() bool {
		for what, want := range heldVersions(t, ns) {
			if want != before[what] {
				t.Logf("%s was written while Cluster API held it", what)
				return true
			}
		}
		return false
	}, heldWindow, pollInterval)
	assertUntouched(t, ns, "waiting", preprovv1.PausedForPreprovisioning)
	assert.Empty(t, metal3DataOwners(claimOf(t, ns, "held-provisioning")), "the held host's claim was handed over")

	// The hold is lifted: the host catches up with both changes.
	removeHostAnnotation(t, ns, "held", clusterv1.PausedAnnotation)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Equal(c, 9000, linkMTU(c, ns, "held"))
		assert.Len(c, metal3DataOwners(claimOf(c, ns, "held-provisioning")), 1)
	}, waitTimeout, pollInterval)
}

// heldVersions are the resourceVersions of the held hosts, their Secrets
// and their claims, and of the host held before it was set up.
func heldVersions(t *testing.T, ns string) map[string]string {
	t.Helper()
	versions := map[string]string{}
	for _, name := range []string{"held", "moving"} {
		versions["Secret "+name] = resourceVersion(t, &corev1.Secret{}, ns, baremetal.NetworkDataSecretName(name))
		versions["IPClaim "+name] = claimOf(t, ns, name+"-provisioning").ResourceVersion
	}
	for _, name := range []string{"held", "moving", "waiting"} {
		versions["BareMetalHost "+name] = getHost(t, ns, name).ResourceVersion
	}
	return versions
}

func resourceVersion(t require.TestingT, obj client.Object, ns, name string) string {
	require.NoError(t, k8sClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, obj))
	return obj.GetResourceVersion()
}

// linkMTU is the MTU of the first link in the host's Secret.
func linkMTU(t require.TestingT, ns, hostName string) int {
	networkData := readNetworkData(t, ns, hostName)
	links, ok := networkData["links"].([]any)
	require.True(t, ok && len(links) > 0, "no links in %v", networkData)
	link, ok := links[0].(map[string]any)
	require.True(t, ok)
	mtu, ok := link["mtu"].(float64)
	require.True(t, ok, "no MTU in %v", link)
	return int(mtu)
}

func removeHostAnnotation(t *testing.T, ns, name, key string) {
	t.Helper()
	host := getHost(t, ns, name)
	original := host.DeepCopy()
	delete(host.Annotations, key)
	require.NoError(t, k8sClient.Patch(context.Background(), host, client.MergeFrom(original)))
}
