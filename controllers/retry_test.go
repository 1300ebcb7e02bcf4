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

	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capm3-preprov/capm3-preprov/baremetal"
	"github.com/capm3-preprov/capm3-preprov/test/framework/fixtures"
)

// IPAM never looks at a failed claim again: a host waiting on an exhausted
// pool gets the next address that is released, whoever held it.
func TestHostWaitingOnAnExhaustedPoolGetsTheNextReleasedAddress(t *testing.T) {
	ns := newNamespace(t)
	racked := map[string]string{"rack": "r1"}
	// CAPM3's claim for a provisioned machine holds the pool's one address.
	capm3Claim := &ipamv1.IPClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "workers-0-tiny"},
		Spec:       ipamv1.IPClaimSpec{Pool: corev1.ObjectReference{Name: "tiny", Namespace: ns}},
	}
	create(t,
		fixtures.Pool(ns, "tiny", "192.0.2.10", "192.0.2.10", "192.0.2.1"),
		capm3Claim,
		fixtures.PreprovisioningTemplate(ns, "rack-r1", racked, fixtures.PoolNetworkData("tiny")),
	)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.NotNil(c, claimOf(c, ns, capm3Claim.Name).Status.Address)
	}, waitTimeout, pollInterval)

	create(t, fixtures.Host(ns, "node-0", "52:54:00:aa:bb:01", racked))
	waitForEvent(t, ns, "node-0", baremetal.ReasonIPClaimFailed)

	// CAPM3 deprovisions the machine: its claim, and the address, go.
	require.NoError(t, k8sClient.Delete(context.Background(), capm3Claim))
	assert.Equal(t, "192.0.2.10", ipOf(waitForNetworkData(t, ns, "node-0")))

	// The next host waits; deleting node-0 hands it the address.
	create(t, fixtures.Host(ns, "node-1", "52:54:00:aa:bb:02", racked))
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.NotNil(c, claimOf(c, ns, "node-1-tiny").Status.ErrorMessage)
	}, waitTimeout, pollInterval)
	require.NoError(t, k8sClient.Delete(context.Background(), getHost(t, ns, "node-0")))
	assert.Equal(t, "192.0.2.10", ipOf(waitForNetworkData(t, ns, "node-1")))
}

// A host we set up whose template now names a pool that does not exist yet
// is woken when the pool is created.
func TestHostSetUpEarlierIsWokenByANewPoolOfItsTemplate(t *testing.T) {
	ns := newNamespace(t)
	setUpRackedHost(t, ns)

	template := getTemplate(t, ns, "rack-r1")
	original := template.DeepCopy()
	template.Spec.NetworkData = fixtures.PoolNetworkData("later")
	require.NoError(t, k8sClient.Patch(context.Background(), template, client.MergeFrom(original)))
	waitForEvent(t, ns, "node-0", baremetal.ReasonIPClaimFailed)

	create(t, fixtures.Pool(ns, "later", "192.0.2.10", "192.0.2.20", "192.0.2.1"))
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Equal(c, "192.0.2.10", ipOf(readNetworkData(c, ns, "node-0")))
	}, waitTimeout, pollInterval)
}

func ipOf(networkData map[string]any) any {
	networks, _ := networkData["networks"].([]any)
	if len(networks) == 0 {
		return nil
	}
	return networks[0].(map[string]any)["ip_address"]
}
