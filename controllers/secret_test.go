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
	"fmt"
	"strings"
	"testing"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	capm3 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/baremetal"
	"github.com/capm3-preprov/capm3-preprov/internal/ownership"
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

// A Secret of our name that the host owns is ours only when we wrote it
// for the host: BMO puts the host's owner reference on every Secret it
// acquires. One without our marks is never overwritten; one we wrote before
// the written-for annotation existed (our label, the host's owner
// reference) is still ours, and gets the annotation with our next write.
func TestSecretTheHostOwnsButWeDidNotWriteIsNeverOverwritten(t *testing.T) {
	ns := newNamespace(t)
	racked := map[string]string{"rack": "r1"}
	// No template yet: the hosts stay paused while their Secrets are made.
	users, legacy := fixtures.Host(ns, "users", "52:54:00:aa:bb:01", racked), fixtures.Host(ns, "legacy", "52:54:00:aa:bb:02", racked)
	create(t, users, legacy)
	// A user's Secret that BMO acquired: the host's owner reference, BMO's
	// label and finalizer.
	acquired := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ns, Name: baremetal.NetworkDataSecretName("users"),
			Labels:          map[string]string{preprovv1.BMOSecretLabel: preprovv1.BMOSecretLabelValue},
			Finalizers:      []string{preprovv1.BMOSecretFinalizer},
			OwnerReferences: []metav1.OwnerReference{ownership.HostOwnerReference(users)},
		},
		StringData: map[string]string{"networkData": "the user's"},
	}
	written := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ns, Name: baremetal.NetworkDataSecretName("legacy"),
			Labels: map[string]string{
				preprovv1.BMOSecretLabel: preprovv1.BMOSecretLabelValue, preprovv1.ManagedLabel: preprovv1.ManagedLabelValue,
			},
			OwnerReferences: []metav1.OwnerReference{ownership.HostOwnerReference(legacy)},
		},
		StringData: map[string]string{"networkData": "{}"},
	}
	create(t, acquired, written)
	create(t, fixtures.PreprovisioningTemplate(ns, "rack-r1", racked, fixtures.StaticNetworkData()))

	note := waitForEvent(t, ns, "users", baremetal.ReasonSecretConflict)
	assert.Contains(t, note, `Secret "users-preprov-networkdata" exists but was not created for this host`)
	assert.Contains(t, note, preprovv1.WrittenForAnnotation)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Equal(c, baremetal.ReasonSecretConflict, getHost(c, ns, "users").Annotations[preprovv1.ProblemAnnotation])
	}, waitTimeout, pollInterval)
	assertPausedForUs(t, ns, "users")
	kept := &corev1.Secret{}
	require.NoError(t, k8sClient.Get(context.Background(), client.ObjectKeyFromObject(acquired), kept))
	assert.Equal(t, "the user's", string(kept.Data["networkData"]))
	assert.NotContains(t, kept.Labels, preprovv1.ManagedLabel)
	assert.NotContains(t, kept.Annotations, preprovv1.WrittenForAnnotation)

	waitForNetworkData(t, ns, "legacy")
	ours := &corev1.Secret{}
	require.NoError(t, k8sClient.Get(context.Background(), client.ObjectKeyFromObject(written), ours))
	assert.Equal(t, written.UID, ours.UID)
	assert.Equal(t, legacy.Name, ours.Annotations[preprovv1.WrittenForAnnotation])
	assert.NotEqual(t, "{}", string(ours.Data["networkData"]))

	// BMO lets go of the user's Secret (the test's namespace is not deleted).
	kept.Finalizers = nil
	require.NoError(t, k8sClient.Update(context.Background(), kept))
}

// A host registered again under its name is a new host: it waits for the
// earlier host's Secret, which BMO's finalizer holds until BMO has deleted
// that host, says so, and is set up once the Secret goes.
func TestHostRegisteredAgainWaitsForTheEarlierHostsSecret(t *testing.T) {
	ns := newNamespace(t)
	setUpRackedHost(t, ns)
	earlier := getHost(t, ns, "node-0")
	secretKey := client.ObjectKey{Namespace: ns, Name: baremetal.NetworkDataSecretName("node-0")}
	// BMO acquired the Secret.
	setSecretFinalizers(t, secretKey, preprovv1.BMOSecretFinalizer)
	require.NoError(t, k8sClient.Delete(context.Background(), earlier))
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		err := k8sClient.Get(context.Background(), client.ObjectKeyFromObject(earlier), &bmov1alpha1.BareMetalHost{})
		assert.True(c, apierrors.IsNotFound(err), "the earlier host is still there: %v", err)
	}, waitTimeout, pollInterval)

	again := fixtures.Host(ns, "node-0", "52:54:00:aa:bb:01", map[string]string{"rack": "r1"})
	create(t, again)
	note := waitForHostEvent(t, again, corev1.EventTypeWarning, baremetal.ReasonSecretOfEarlierHost)
	assert.Contains(t, note, `Secret "node-0-preprov-networkdata" of an earlier BareMetalHost named "node-0" is being deleted`)
	assert.Contains(t, note, preprovv1.BMOSecretFinalizer)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Equal(c, baremetal.ReasonSecretOfEarlierHost, getHost(c, ns, "node-0").Annotations[preprovv1.ProblemAnnotation])
	}, waitTimeout, pollInterval)
	assertPausedForUs(t, ns, "node-0")

	// BMO has deleted the earlier host and lets go of its Secret.
	setSecretFinalizers(t, secretKey)
	waitForNetworkData(t, ns, "node-0")
	secret := &corev1.Secret{}
	require.NoError(t, k8sClient.Get(context.Background(), secretKey, secret))
	assert.Equal(t, again.Name, secret.Annotations[preprovv1.WrittenForAnnotation])
	waitForHostEvent(t, again, corev1.EventTypeNormal, baremetal.ReasonNetworkDataSet)
	assert.NotContains(t, getHost(t, ns, "node-0").Annotations, preprovv1.ProblemAnnotation)
}

// A host deleted and registered again under its name is reported as a new
// host, even when no reconcile saw it gone: its events are not taken for
// repeats of the earlier host's.
func TestHostRegisteredAgainIsReportedAgain(t *testing.T) {
	ns := newNamespace(t)
	racked := map[string]string{"rack": "r1"}
	// The hosts lack the annotation their link's MAC comes from.
	create(t, fixtures.PreprovisioningTemplate(ns, "rack-r1", racked, withMAC(fixtures.StaticNetworkData(),
		&capm3.NetworkLinkEthernetMac{FromAnnotation: capm3.NetworkLinkEthernetMacFromAnnotation{
			Object: "baremetalhost", Annotation: "example.com/mac",
		}})))
	manager, _ := countingHostManager(t, false)
	recorder := manager.Recorder.(*events.FakeRecorder)
	for range 2 {
		host := fixtures.Host(ns, "node-0", "52:54:00:aa:bb:01", racked)
		create(t, host)
		outcome, err := manager.Reconcile(context.Background(), getHost(t, ns, "node-0"))
		require.NoError(t, err)
		assert.Equal(t, baremetal.PhaseFailed, outcome.Phase)
		require.Len(t, recorder.Events, 1, "host %s", host.UID)
		assert.Contains(t, <-recorder.Events, "Warning "+baremetal.ReasonRenderFailed)

		require.NoError(t, k8sClient.Delete(context.Background(), host))
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			err := k8sClient.Get(context.Background(), client.ObjectKeyFromObject(host), &bmov1alpha1.BareMetalHost{})
			assert.True(c, apierrors.IsNotFound(err), "the host is still there: %v", err)
		}, waitTimeout, pollInterval)
	}
}

// A link whose MAC the template takes from a host interface gets the MAC of
// the host's NIC once BMO has inspected it; where that is not the boot MAC
// that stood in before, a Warning names both.
func TestMACThatInspectionChangesIsAWarning(t *testing.T) {
	ns := newNamespace(t)
	setUpRackedHost(t, ns)
	host := getHost(t, ns, "node-0")
	host.Status.Provisioning.State = bmov1alpha1.StateAvailable
	host.Status.HardwareDetails = &bmov1alpha1.HardwareDetails{NIC: []bmov1alpha1.NIC{
		{Name: "enp1s0", MAC: "52:54:00:cc:dd:01"}, {Name: "enp2s0", MAC: "52:54:00:aa:bb:01"},
	}}
	require.NoError(t, k8sClient.Status().Update(context.Background(), host))

	note := waitForHostEvent(t, host, corev1.EventTypeWarning, baremetal.ReasonMACChanged)
	assert.Contains(t, note, `Secret "node-0-preprov-networkdata"`)
	assert.Contains(t, note, `link "enp1s0" (host interface "enp1s0") from 52:54:00:aa:bb:01 to 52:54:00:cc:dd:01`)
	networkData := readNetworkData(t, ns, "node-0")
	assert.Equal(t, "52:54:00:cc:dd:01", networkData["links"].([]any)[0].(map[string]any)["ethernet_mac_address"])
}

// Network data larger than a Secret holds is the template's error, reported
// once, not a write the API server refuses on every retry.
func TestNetworkDataTooLargeForASecretIsReported(t *testing.T) {
	ns := newNamespace(t)
	racked := map[string]string{"rack": "r1"}
	create(t,
		fixtures.PreprovisioningTemplate(ns, "rack-r1", racked, networkDataOverOneMiB()),
		fixtures.Host(ns, "node-0", "52:54:00:aa:bb:01", racked),
	)
	note := waitForEvent(t, ns, "node-0", baremetal.ReasonNetworkDataTooLarge)
	assert.Contains(t, note, "over the 1048576 bytes a Secret holds")
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Equal(c, baremetal.ReasonNetworkDataTooLarge, getHost(c, ns, "node-0").Annotations[preprovv1.ProblemAnnotation])
	}, waitTimeout, pollInterval)
	assertUntouched(t, ns, "node-0", preprovv1.PausedForPreprovisioning)
}

// networkDataOverOneMiB renders to more than a Secret holds (a DNS service
// renders to three times its template's bytes), within the CRD's limits.
func networkDataOverOneMiB() *capm3.NetworkData {
	networkData := fixtures.StaticNetworkData()
	dns := make([]ipamv1.IPAddressv4Str, 64)
	for i := range dns {
		dns[i] = ipamv1.IPAddressv4Str(fmt.Sprintf("192.0.2.%d", i+1))
	}
	for n := range 8 {
		network := capm3.NetworkDataIPv4DHCP{ID: fmt.Sprintf("dhcp-%d", n), Link: "enp1s0"}
		for r := range 64 {
			network.Routes = append(network.Routes, capm3.NetworkDataRoutev4{
				Network: ipamv1.IPAddressv4Str(fmt.Sprintf("10.%d.%d.0", n, r)), Prefix: ptr.To(int32(24)),
				Gateway:  capm3.NetworkGatewayv4{String: ptr.To(ipamv1.IPAddressv4Str("192.0.2.254"))},
				Services: &capm3.NetworkDataServicev4{DNS: dns},
			})
		}
		networkData.Networks.IPv4DHCP = append(networkData.Networks.IPv4DHCP, network)
	}
	return networkData
}

func setSecretFinalizers(t *testing.T, key client.ObjectKey, finalizers ...string) {
	t.Helper()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		secret := &corev1.Secret{}
		require.NoError(c, k8sClient.Get(context.Background(), key, secret))
		secret.Finalizers = finalizers
		require.NoError(c, k8sClient.Update(context.Background(), secret))
	}, waitTimeout, pollInterval)
}

// waitForHostEvent waits for an event of this type and reason on this host
// (by UID: an earlier host of the same name has its own), and returns its note.
func waitForHostEvent(t *testing.T, host *bmov1alpha1.BareMetalHost, eventType, reason string) string {
	t.Helper()
	var note string
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		note = ""
		for _, event := range hostEvents(c, host.Namespace, host.Name) {
			if event.Regarding.UID == host.UID && event.Type == eventType && event.Reason == reason {
				note = event.Note
			}
		}
		require.NotEmpty(c, note, "no %s %s event on host %s yet", eventType, reason, host.UID)
	}, waitTimeout, pollInterval)
	return note
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
