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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/internal/ownership"
	"github.com/capm3-preprov/capm3-preprov/test/framework/fixtures"
)

// IPAM makes a claim an owner of the address it allocates, and a claim
// deleted before IPAM's finalizer is on it leaves that address behind. The
// sweep of the claim's host, which no longer exists, finds the address once
// the garbage collector has dropped its owner reference to the claim that is
// gone (the manager indexes only such addresses), and releases it.
func TestAddressLeftBehindADeletedClaimOfAGoneHostIsReleased(t *testing.T) {
	ns := newNamespace(t)
	create(t, fixtures.Pool(ns, "tiny", "192.0.2.10", "192.0.2.10", "192.0.2.1"))
	claim := &ipamv1.IPClaim{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ns, Name: "node-0-tiny",
			Labels: map[string]string{preprovv1.ManagedLabel: preprovv1.ManagedLabelValue},
		},
		Spec: ipamv1.IPClaimSpec{Pool: corev1.ObjectReference{Name: "tiny", Namespace: ns}},
	}
	create(t, claim)
	var addressName string
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		allocated := claimOf(c, ns, claim.Name)
		require.NotNil(c, allocated.Status.Address, "IPAM has not allocated the claim")
		addressName = allocated.Status.Address.Name
	}, waitTimeout, pollInterval)
	address := &ipamv1.IPAddress{}
	require.NoError(t, k8sClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: addressName}, address))
	require.True(t, ownership.OwnedByIPClaim(address, claim.Name), "IPAM made the claim an owner of its address")

	// The claim goes without IPAM's finalizer: IPAM never releases the
	// address (IPAM skips a claim that has its address).
	allocated := claimOf(t, ns, claim.Name)
	original := allocated.DeepCopy()
	allocated.Finalizers = nil
	require.NoError(t, k8sClient.Patch(context.Background(), allocated, client.MergeFrom(original)))
	require.NoError(t, k8sClient.Delete(context.Background(), allocated))

	require.EventuallyWithT(t, func(c *assert.CollectT) {
		err := k8sClient.Get(context.Background(), client.ObjectKeyFromObject(address), &ipamv1.IPAddress{})
		assert.True(c, apierrors.IsNotFound(err), "the address left behind the deleted claim of node-0, a host that does not exist, is still there")
	}, waitTimeout, pollInterval)
}
