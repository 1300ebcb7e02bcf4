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

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/baremetal"
	"github.com/capm3-preprov/capm3-preprov/test/framework/fixtures"
)

// bmoFinalizer is the finalizer BMO puts on every host; it removes it only
// after it has run the host's deletion, which it never does while the host
// is paused.
const bmoFinalizer = "baremetalhost.metal3.io"

// A host deleted while still paused for us would wait for BMO forever: our
// pause, and only ours, is removed; nothing else is written on it.
func TestHostDeletedWhilePausedForUsIsUnpausedForBMO(t *testing.T) {
	ns := newNamespace(t)
	ours := fixtures.Host(ns, "waiting", "52:54:00:aa:bb:01", map[string]string{"rack": "nowhere"})
	ours.Finalizers = []string{bmoFinalizer}
	theirs := fixtures.Host(ns, "moving", "52:54:00:aa:bb:02", map[string]string{"rack": "nowhere"})
	theirs.Annotations[preprovv1.PausedAnnotation] = "metal3.io/capm3"
	theirs.Finalizers = []string{bmoFinalizer}
	create(t, ours, theirs)
	t.Cleanup(func() {
		for _, name := range []string{"waiting", "moving"} {
			dropFinalizers(t, ns, name)
		}
	})

	for _, name := range []string{"waiting", "moving"} {
		require.NoError(t, k8sClient.Delete(context.Background(), getHost(t, ns, name)))
	}
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.NotContains(c, getHost(c, ns, "waiting").Annotations, preprovv1.PausedAnnotation)
	}, waitTimeout, pollInterval)

	host := getHost(t, ns, "waiting")
	assert.Equal(t, []string{bmoFinalizer}, host.Finalizers)
	assert.Equal(t, map[string]string{"rack": "nowhere"}, host.Labels)
	assert.Empty(t, host.Annotations)
	assert.Empty(t, host.Spec.PreprovisioningNetworkDataName)
	assertNoSecret(t, ns, "waiting")

	// A pause that is not ours stays, even on a host being deleted.
	manager, writes := countingHostManager(t, false)
	outcome, err := manager.Reconcile(context.Background(), getHost(t, ns, "moving"))
	require.NoError(t, err)
	assert.Equal(t, baremetal.PhaseIgnored, outcome.Phase)
	assert.Empty(t, writes.Writes())
	assert.Equal(t, "metal3.io/capm3", getHost(t, ns, "moving").Annotations[preprovv1.PausedAnnotation])
}

func dropFinalizers(t *testing.T, ns, name string) {
	t.Helper()
	host := &bmov1alpha1.BareMetalHost{}
	err := k8sClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, host)
	if apierrors.IsNotFound(err) {
		return
	}
	require.NoError(t, err)
	original := host.DeepCopy()
	host.Finalizers = nil
	require.NoError(t, client.IgnoreNotFound(k8sClient.Patch(context.Background(), host, client.MergeFrom(original))))
}

func assertNoSecret(t *testing.T, ns, hostName string) {
	t.Helper()
	err := k8sClient.Get(context.Background(),
		client.ObjectKey{Namespace: ns, Name: baremetal.NetworkDataSecretName(hostName)}, &corev1.Secret{})
	assert.True(t, apierrors.IsNotFound(err), "host %s has a network data Secret", hostName)
}
