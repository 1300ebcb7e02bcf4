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

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/baremetal"
	"github.com/capm3-preprov/capm3-preprov/ipam"
	"github.com/capm3-preprov/capm3-preprov/test/framework/fixtures"
)

// A host registered again under its name gets, from IPAM, the address left
// behind its earlier claim, unchanged; if that address is released in the
// same moment (the sweep of the earlier host), the new claim points at an
// address that is gone, and IPAM never looks at it again. The claim is made
// again, once, with a Warning, and the host is set up.
func TestClaimOfAHostRegisteredAgainWhoseAddressWasReleasedIsMadeAgain(t *testing.T) {
	ns := newNamespace(t)
	rack := map[string]string{"rack": "r1"}
	create(t,
		fixtures.Pool(ns, "tiny", "192.0.2.10", "192.0.2.11", "192.0.2.1"),
		fixtures.PreprovisioningTemplate(ns, "rack-r1", rack, fixtures.PoolNetworkData("tiny")),
	)
	// What the earlier node-0 left behind: its claim's address.
	leftBehind := &ipamv1.IPAddress{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ns, Name: "tiny-192-0-2-10", Finalizers: []string{ipamv1.IPAddressFinalizer},
			Labels: map[string]string{preprovv1.ManagedLabel: preprovv1.ManagedLabelValue},
		},
		Spec: ipamv1.IPAddressSpec{
			Address: "192.0.2.10", Prefix: 24,
			Pool:  corev1.ObjectReference{Name: "tiny", Namespace: ns},
			Claim: corev1.ObjectReference{Name: "node-0-tiny", Namespace: ns},
		},
	}
	create(t, leftBehind, fixtures.Host(ns, "node-0", "52:54:00:aa:bb:01", rack))

	var lost *ipamv1.IPClaim
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		lost = claimOf(c, ns, ipam.ClaimName("node-0", "tiny"))
		require.NotNil(c, lost.Status.Address)
		assert.Equal(c, leftBehind.Name, lost.Status.Address.Name, "IPAM hands the left-behind address to the new claim")
	}, waitTimeout, pollInterval)
	// The sweep of the earlier host releases it in that moment.
	address := &ipamv1.IPAddress{}
	require.NoError(t, k8sClient.Get(context.Background(), client.ObjectKeyFromObject(leftBehind), address))
	original := address.DeepCopy()
	address.Finalizers = nil
	require.NoError(t, k8sClient.Patch(context.Background(), address, client.MergeFrom(original)))
	require.NoError(t, k8sClient.Delete(context.Background(), address))

	require.EventuallyWithT(t, func(c *assert.CollectT) {
		var remade []string
		for _, event := range hostEvents(c, ns, "node-0") {
			if event.Reason == baremetal.ReasonIPClaimRemade {
				remade = append(remade, event.Note)
				assert.Equal(c, corev1.EventTypeWarning, event.Type)
			}
		}
		require.Len(c, remade, 1, "one Warning for the claim made again")
		assert.Contains(c, remade[0], leftBehind.Name)
		assert.NotEqual(c, lost.UID, claimOf(c, ns, ipam.ClaimName("node-0", "tiny")).UID, "the claim was not made again")
		assert.Equal(c, "192.0.2.10", ipOf(readNetworkData(c, ns, "node-0")))
	}, ipam.MissingAddressTimeout+waitTimeout, pollInterval)
}
