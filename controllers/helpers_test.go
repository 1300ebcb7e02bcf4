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
	"testing"
	"time"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/baremetal"
	"github.com/capm3-preprov/capm3-preprov/test/framework"
	"github.com/capm3-preprov/capm3-preprov/test/framework/fixtures"
)

const (
	waitTimeout  = 30 * time.Second
	pollInterval = 50 * time.Millisecond
)

// newNamespace creates a namespace of its own for one test.
func newNamespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "preprov-test-"}}
	require.NoError(t, k8sClient.Create(context.Background(), ns))
	return ns.Name
}

func create(t *testing.T, objects ...client.Object) {
	t.Helper()
	for _, obj := range objects {
		require.NoError(t, k8sClient.Create(context.Background(), obj), "creating %T %s", obj, obj.GetName())
	}
}

func getHost(t require.TestingT, namespace, name string) *bmov1alpha1.BareMetalHost {
	host := &bmov1alpha1.BareMetalHost{}
	require.NoError(t, k8sClient.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, host))
	return host
}

// setUpRackedHost creates the Metal3PreprovisioningTemplate "rack-r1" with
// static network data and the host "node-0" it selects, and waits until the
// host is set up.
func setUpRackedHost(t *testing.T, ns string) {
	t.Helper()
	racked := map[string]string{"rack": "r1"}
	create(t,
		fixtures.PreprovisioningTemplate(ns, "rack-r1", racked, fixtures.StaticNetworkData()),
		fixtures.Host(ns, "node-0", "52:54:00:aa:bb:01", racked),
	)
	waitForNetworkData(t, ns, "node-0")
}

// waitForNetworkData waits until the host is unpaused and points at its
// Secret, and returns the Secret's network data, decoded.
func waitForNetworkData(t *testing.T, namespace, hostName string) map[string]any {
	t.Helper()
	var networkData map[string]any
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		networkData = readNetworkData(c, namespace, hostName)
	}, waitTimeout, pollInterval)
	return networkData
}

// readNetworkData checks that the host is unpaused and points at its Secret,
// and returns the Secret's network data, decoded.
func readNetworkData(t require.TestingT, namespace, hostName string) map[string]any {
	host := getHost(t, namespace, hostName)
	require.NotContains(t, host.Annotations, preprovv1.PausedAnnotation)
	require.Equal(t, baremetal.NetworkDataSecretName(hostName), host.Spec.PreprovisioningNetworkDataName)
	networkData, err := framework.NetworkData(context.Background(), k8sClient, namespace, hostName)
	require.NoError(t, err)
	return networkData
}

// waitForEvent waits for an event on the host with this reason, and returns
// its note.
func waitForEvent(t *testing.T, namespace, hostName, reason string) string {
	t.Helper()
	var note string
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		note = ""
		for _, event := range hostEvents(c, namespace, hostName) {
			if event.Reason == reason {
				note = event.Note
			}
		}
		require.NotEmpty(c, note, "no %s event on host %s yet", reason, hostName)
	}, waitTimeout, pollInterval)
	return note
}

// assertOneSetUpEvent checks that setting a host up cost one event: a fleet's
// events are written at the client's rate limit, after the hosts.
func assertOneSetUpEvent(t *testing.T, namespace, hostName string) {
	t.Helper()
	events := hostEvents(t, namespace, hostName)
	require.Len(t, events, 1, "events on host %s", hostName)
	assert.Equal(t, corev1.EventTypeNormal, events[0].Type)
	assert.Nil(t, events[0].Series, "a second event with the same reason would have made a series")
}

func hostEvents(t require.TestingT, namespace, hostName string) []eventsv1.Event {
	list := &eventsv1.EventList{}
	require.NoError(t, k8sClient.List(context.Background(), list, client.InNamespace(namespace)))
	var events []eventsv1.Event
	for _, event := range list.Items {
		if event.Regarding.Kind == "BareMetalHost" && event.Regarding.Name == hostName {
			events = append(events, event)
		}
	}
	return events
}

// assertUntouched checks that a host is as the user registered it: still
// paused with the given value, no network data, no Secret, no claim.
func assertUntouched(t *testing.T, namespace, hostName, pausedValue string) {
	t.Helper()
	host := getHost(t, namespace, hostName)
	assert.Equal(t, pausedValue, host.Annotations[preprovv1.PausedAnnotation])
	assert.Empty(t, host.Spec.PreprovisioningNetworkDataName)
	assert.NotContains(t, host.Labels, preprovv1.ManagedLabel)
	secrets := &corev1.SecretList{}
	require.NoError(t, k8sClient.List(context.Background(), secrets, client.InNamespace(namespace)))
	for _, secret := range secrets.Items {
		assert.NotEqual(t, baremetal.NetworkDataSecretName(hostName), secret.Name)
	}
}

func metaNamed(namespace, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: namespace, Name: name}
}

// createPooledWorkers creates the usual setup: the pool "provisioning"
// (192.0.2.10-20), the Metal3DataTemplate "pooled" drawing the boot link's
// address from it, the opted-in Metal3MachineTemplate "workers" selecting
// role=worker, and paused worker hosts with boot MACs 52:54:00:aa:bb:01, 02...
func createPooledWorkers(t *testing.T, ns string, hostNames ...string) {
	t.Helper()
	objects := []client.Object{
		fixtures.Pool(ns, "provisioning", "192.0.2.10", "192.0.2.20", "192.0.2.1"),
		fixtures.DataTemplate(ns, "pooled", fixtures.PoolNetworkData("provisioning")),
		fixtures.MachineTemplate(ns, "workers", "pooled", workers),
	}
	for i, name := range hostNames {
		objects = append(objects, fixtures.Host(ns, name, fmt.Sprintf("52:54:00:aa:bb:%02x", i+1), workers))
	}
	create(t, objects...)
}
