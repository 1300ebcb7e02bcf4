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

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/baremetal"
	"github.com/capm3-preprov/capm3-preprov/test/framework/fixtures"
)

// A Secret of our name that this host does not own is never taken over:
// somebody else's is reported until it goes, an earlier host's is waited
// for while the garbage collector removes it.
func TestSecretNameTakenIsReportedNotRetriedBlindly(t *testing.T) {
	ns := newNamespace(t)
	racked := map[string]string{"rack": "r1"}
	foreign := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: baremetal.NetworkDataSecretName("taken")},
		StringData: map[string]string{"networkData": "the user's"},
	}
	// What an earlier host "again" left, its owner reference naming a
	// host that is gone.
	stale := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ns, Name: baremetal.NetworkDataSecretName("again"),
			Labels: map[string]string{preprovv1.ManagedLabel: preprovv1.ManagedLabelValue},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: bmov1alpha1.GroupVersion.String(), Kind: "BareMetalHost", Name: "again",
				UID: "00000000-0000-0000-0000-000000000001",
			}},
		},
		StringData: map[string]string{"networkData": "the earlier host's"},
	}
	create(t, foreign, stale,
		fixtures.PreprovisioningTemplate(ns, "rack-r1", racked, fixtures.StaticNetworkData()),
		fixtures.Host(ns, "taken", "52:54:00:aa:bb:01", racked),
		fixtures.Host(ns, "again", "52:54:00:aa:bb:02", racked),
	)

	note := waitForEvent(t, ns, "taken", baremetal.ReasonSecretConflict)
	assert.Contains(t, note, `Secret "taken-preprov-networkdata" exists but was not created for this host`)
	assert.Contains(t, note, "delete or rename it")
	assertPausedForUs(t, ns, "taken")
	kept := &corev1.Secret{}
	require.NoError(t, k8sClient.Get(context.Background(), client.ObjectKeyFromObject(foreign), kept))
	assert.Equal(t, "the user's", string(kept.Data["networkData"]))
	assert.Empty(t, kept.OwnerReferences)

	// The earlier host's Secret goes with the garbage collector; then the
	// host gets a Secret of its own, with no Warning on the way.
	waitForNetworkData(t, ns, "again")
	secret := &corev1.Secret{}
	require.NoError(t, k8sClient.Get(context.Background(), client.ObjectKeyFromObject(stale), secret))
	require.Len(t, secret.OwnerReferences, 1)
	assert.Equal(t, getHost(t, ns, "again").UID, secret.OwnerReferences[0].UID)
	assert.NotEqual(t, stale.UID, secret.UID, "the earlier host's Secret was taken over")
	for _, event := range hostEvents(t, ns, "again") {
		assert.Equal(t, corev1.EventTypeNormal, event.Type, "%s: %s", event.Reason, event.Note)
	}

	// Once the user's Secret is gone, the host is set up.
	require.NoError(t, k8sClient.Delete(context.Background(), kept))
	waitForNetworkData(t, ns, "taken")
}

func TestHostNameTooLongForItsSecretIsReported(t *testing.T) {
	ns := newNamespace(t)
	racked := map[string]string{"rack": "r1"}
	longName := strings.Repeat("n", 240)
	create(t,
		fixtures.PreprovisioningTemplate(ns, "rack-r1", racked, fixtures.StaticNetworkData()),
		fixtures.Host(ns, longName, "52:54:00:aa:bb:01", racked),
	)
	note := waitForEvent(t, ns, longName, baremetal.ReasonNameTooLong)
	assert.Contains(t, note, "(260 characters), over the limit of 253")
	assert.Contains(t, note, "at most 233 characters")
	assertPausedForUs(t, ns, longName)

	// A name short enough for the Secret can still be too long for a claim.
	pool := "provisioning-network-of-rack-r2"
	claimTooLong := strings.Repeat("m", 230)
	create(t,
		fixtures.Pool(ns, pool, "192.0.2.10", "192.0.2.20", "192.0.2.1"),
		fixtures.PreprovisioningTemplate(ns, "rack-r2", map[string]string{"rack": "r2"}, fixtures.PoolNetworkData(pool)),
		fixtures.Host(ns, claimTooLong, "52:54:00:aa:bb:02", map[string]string{"rack": "r2"}),
	)
	note = waitForEvent(t, ns, claimTooLong, baremetal.ReasonIPClaimFailed)
	assert.Contains(t, note, "(262 characters), over the limit of 253")
	assertPausedForUs(t, ns, claimTooLong)
}

func assertPausedForUs(t *testing.T, ns, hostName string) {
	t.Helper()
	host := getHost(t, ns, hostName)
	assert.Equal(t, preprovv1.PausedForPreprovisioning, host.Annotations[preprovv1.PausedAnnotation])
	assert.Empty(t, host.Spec.PreprovisioningNetworkDataName)
}
