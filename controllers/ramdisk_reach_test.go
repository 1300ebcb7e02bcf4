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
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/baremetal"
	"github.com/capm3-preprov/capm3-preprov/networkdata"
	"github.com/capm3-preprov/capm3-preprov/test/framework/fixtures"
)

// A host whose network data gives its deploy ramdisk no way to Ironic is
// kept paused, with a Warning, the problem on the host and the template's
// reason, and nothing written for it; fixing the template's network data
// sets it up. Once set up it is never paused again: an endpoint its data
// cannot reach only brings the Warning.
func TestRamdiskWithoutAWayToIronicStaysPaused(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	racked := map[string]string{"rack": "r1"}
	// The commonest slip: the pool has a gateway, the template no route.
	networkData := fixtures.PoolNetworkData("provisioning")
	networkData.Networks.IPv4[0].Routes = nil
	template := fixtures.PreprovisioningTemplate(ns, "rack-r1", racked, networkData)
	template.Spec.RamdiskEndpoints = []string{"https://198.51.100.2:6385", "192.0.2.3"}
	create(t, fixtures.Pool(ns, "provisioning", "192.0.2.10", "192.0.2.20", "192.0.2.1"), template,
		fixtures.Host(ns, "node-0", "52:54:00:aa:bb:01", racked))

	note := waitForEvent(t, ns, "node-0", baremetal.ReasonEndpointUnreachable)
	assert.Contains(t, note, "the host is kept paused (metal3.io/preprovisioning) and nothing is written for it")
	assert.Contains(t, note, "the network data Metal3PreprovisioningTemplate/rack-r1 renders gives the deploy ramdisk no way to what it must reach "+
		"without DHCP (the template's spec.ramdiskEndpoints): https://198.51.100.2:6385 (198.51.100.2): "+
		"no IPv4 network has it on its subnet (192.0.2.0/24 on network provisioning), and no route leads to it")
	assert.NotContains(t, note, "192.0.2.3:", "an endpoint on the host's subnet is reached")
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Equal(c, baremetal.ReasonEndpointUnreachable, getHost(c, ns, "node-0").Annotations[preprovv1.ProblemAnnotation])
		ready := templateReady(c, getTemplate(c, ns, "rack-r1"))
		assert.Equal(c, preprovv1.EndpointsUnreachableReason, ready.Reason)
		assert.Equal(c, metav1.ConditionFalse, ready.Status)
	}, waitTimeout, pollInterval)
	assertKeptPaused(t, ns, "node-0")

	// The fix: the default route through the pool's gateway.
	patchTemplate(t, ns, "rack-r1", func(template *preprovv1.Metal3PreprovisioningTemplate) {
		template.Spec.NetworkData.Networks.IPv4[0].Routes = fixtures.PoolNetworkData("provisioning").Networks.IPv4[0].Routes
	})
	waitForNetworkData(t, ns, "node-0")
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.NotContains(c, getHost(c, ns, "node-0").Annotations, preprovv1.ProblemAnnotation)
		assert.Equal(c, preprovv1.ReadyReason, templateReady(c, getTemplate(c, ns, "rack-r1")).Reason)
	}, waitTimeout, pollInterval)

	// Set up, the host is not paused again: an IPv6 Ironic its IPv4 data
	// cannot reach (BMO issue 1664) brings a Warning.
	patchTemplate(t, ns, "rack-r1", func(template *preprovv1.Metal3PreprovisioningTemplate) {
		template.Spec.RamdiskEndpoints = append(template.Spec.RamdiskEndpoints, "https://[2001:db8:1::2]:6385")
	})
	note = waitForEventSaying(t, ns, "node-0", baremetal.ReasonEndpointUnreachable, "set up anyway")
	assert.Contains(t, note, "https://[2001:db8:1::2]:6385 (2001:db8:1::2): the network data has no IPv6 network")
	readNetworkData(t, ns, "node-0")
	assert.NotContains(t, getHost(t, ns, "node-0").Annotations, preprovv1.ProblemAnnotation)
}

// The manager's --ramdisk-endpoints apply to the hosts of a
// Metal3MachineTemplate, and a Metal3PreprovisioningTemplate's own
// endpoints replace them for its hosts.
func TestManagersRamdiskEndpoints(t *testing.T) {
	ns := newNamespace(t)
	shard := ns
	endpoints, err := networkdata.ParseEndpoints([]string{"https://[2001:db8:1::2]:6385"})
	require.NoError(t, err)
	startShardManagerWith(t, shard, Options{RamdiskEndpoints: endpoints})
	inShard := func(labels map[string]string) map[string]string {
		withShard := map[string]string{clusterv1.WatchLabel: shard}
		for key, value := range labels {
			withShard[key] = value
		}
		return withShard
	}
	pool := fixtures.Pool(ns, "provisioning", "192.0.2.10", "192.0.2.20", "192.0.2.1")
	dataTemplate := fixtures.DataTemplate(ns, "pooled", fixtures.PoolNetworkData("provisioning"))
	machineTemplate := fixtures.MachineTemplate(ns, "workers", "pooled", workers)
	racked := map[string]string{"rack": "r1"}
	template := fixtures.PreprovisioningTemplate(ns, "rack-r1", racked, fixtures.PoolNetworkData("provisioning"))
	template.Spec.RamdiskEndpoints = []string{"http://192.0.2.2:6385"}
	for _, obj := range []client.Object{pool, dataTemplate, machineTemplate, template} {
		obj.SetLabels(inShard(obj.GetLabels()))
	}
	create(t, pool, dataTemplate, machineTemplate, template,
		fixtures.Host(ns, "worker-0", "52:54:00:aa:bb:01", inShard(workers)),
		fixtures.Host(ns, "node-0", "52:54:00:aa:bb:02", inShard(racked)))

	// IPv4 data, an IPv6 Ironic: BMO issue 1664.
	note := waitForEvent(t, ns, "worker-0", baremetal.ReasonEndpointUnreachable)
	assert.Contains(t, note, "the network data Metal3MachineTemplate/workers renders gives the deploy ramdisk no way to what it "+
		"must reach without DHCP (the manager's --ramdisk-endpoints): https://[2001:db8:1::2]:6385 (2001:db8:1::2): "+
		"the network data has no IPv6 network")
	assertKeptPaused(t, ns, "worker-0")
	waitForNetworkData(t, ns, "node-0")
}

// assertKeptPaused checks that a host is still paused for us and that
// nothing was written for it: no Secret, no network data name, not ours.
func assertKeptPaused(t *testing.T, ns, hostName string) {
	t.Helper()
	host := getHost(t, ns, hostName)
	assert.Equal(t, preprovv1.PausedForPreprovisioning, host.Annotations[preprovv1.PausedAnnotation])
	assert.Empty(t, host.Spec.PreprovisioningNetworkDataName)
	assert.NotContains(t, host.Labels, preprovv1.ManagedLabel)
	secret := &corev1.Secret{}
	err := k8sClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: baremetal.NetworkDataSecretName(hostName)}, secret)
	assert.True(t, apierrors.IsNotFound(err), "the host's Secret was written: %v", err)
}

// waitForEventSaying waits for an event on the host with this reason whose
// note contains says, and returns the note.
func waitForEventSaying(t *testing.T, ns, hostName, reason, says string) string {
	t.Helper()
	var note string
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		note = ""
		for _, event := range hostEvents(c, ns, hostName) {
			if event.Reason == reason && strings.Contains(event.Note, says) {
				note = event.Note
			}
		}
		require.NotEmpty(c, note, "no %s event saying %q on host %s yet", reason, says, hostName)
	}, waitTimeout, pollInterval)
	return note
}
