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

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/baremetal"
	"github.com/capm3-preprov/capm3-preprov/test/framework/fixtures"
)

// A manager that has just started (a restart, a new leader) knows nothing
// of the hosts: its first reconcile of a template must write the right
// status all the same, without any host being reconciled again or changing:
// its host tally counts them from its cache's initial list.
func TestTemplateStatusIsRightOnAFreshManagersFirstReconcile(t *testing.T) {
	ns := newNamespace(t)
	racked := map[string]string{"rack": "r1"}
	create(t,
		fixtures.Pool(ns, "tiny", "192.0.2.10", "192.0.2.11", "192.0.2.1"),
		fixtures.PreprovisioningTemplate(ns, "rack-r1", racked, fixtures.PoolNetworkData("tiny")),
		fixtures.DataTemplate(ns, "static", fixtures.StaticNetworkData()),
		fixtures.MachineTemplate(ns, "workers", "static", workers),
		fixtures.Host(ns, "node-0", "52:54:00:aa:bb:01", racked),
		fixtures.Host(ns, "node-1", "52:54:00:aa:bb:02", racked),
	)
	waitForNetworkData(t, ns, "node-0")
	waitForNetworkData(t, ns, "node-1")
	// The pool is exhausted for the third; the fourth is a conflict.
	create(t,
		fixtures.Host(ns, "node-2", "52:54:00:aa:bb:03", racked),
		fixtures.Host(ns, "node-3", "52:54:00:aa:bb:04", map[string]string{"rack": "r1", "role": "worker"}),
	)
	waitForEvent(t, ns, "node-2", baremetal.ReasonIPClaimFailed)
	waitForEvent(t, ns, "node-3", baremetal.ReasonTemplateConflict)
	// The running manager has seen every host's outcome before it is
	// paused: a reconcile of its own still under way when the pause comes
	// then writes the same status, not one from an older view.
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		template := &preprovv1.Metal3PreprovisioningTemplate{}
		assert.NoError(c, k8sClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "rack-r1"}, template))
		assert.Equal(c, ptr.To(int32(1)), template.Status.ConflictingHosts)
		assert.Equal(c, ptr.To(int32(1)), template.Status.FailedHosts)
		assert.Equal(c, ptr.To(int32(2)), template.Status.ReadyHosts)
	}, waitTimeout, pollInterval)

	// The running manager leaves the template alone from now on, and its
	// status is what a manager that knew nothing would have written.
	template := getTemplate(t, ns, "rack-r1")
	original := template.DeepCopy()
	template.Annotations = map[string]string{clusterv1.PausedAnnotation: ""}
	require.NoError(t, k8sClient.Patch(context.Background(), template, client.MergeFrom(original)))
	template = getTemplate(t, ns, "rack-r1")
	original = template.DeepCopy()
	zero := ptr.To(int32(0))
	template.Status = preprovv1.Metal3PreprovisioningTemplateStatus{
		MatchedHosts: zero, ReadyHosts: zero, WaitingHosts: zero, FailedHosts: zero, ConflictingHosts: zero,
		OrphanedHosts: zero, StalledHosts: zero,
		Conditions: []metav1.Condition{{
			Type: preprovv1.ReadyCondition, Status: metav1.ConditionTrue, Reason: preprovv1.NoHostsReason,
			Message: "no host is selected yet", LastTransitionTime: metav1.Now(),
		}},
	}
	require.NoError(t, k8sClient.Status().Patch(context.Background(), template, client.MergeFrom(original)))

	fresh := &TemplateStatusReconciler{
		Client: k8sClient, Templates: &baremetal.Templates{Reader: k8sClient}, Recorder: events.NewFakeRecorder(10),
		Hosts: startFreshHostTally(t, ns),
	}
	_, err := fresh.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKey{Namespace: ns, Name: "rack-r1"}})
	require.NoError(t, err)

	status := getTemplate(t, ns, "rack-r1").Status
	assert.Equal(t, ptr.To(int32(4)), status.MatchedHosts)
	assert.Equal(t, ptr.To(int32(2)), status.ReadyHosts)
	assert.Equal(t, ptr.To(int32(1)), status.FailedHosts)
	assert.Equal(t, ptr.To(int32(1)), status.ConflictingHosts)
	assert.Equal(t, ptr.To(int32(0)), status.WaitingHosts)
	ready := templateReady(t, getTemplate(t, ns, "rack-r1"))
	assert.Equal(t, metav1.ConditionFalse, ready.Status)
	assert.Equal(t, preprovv1.HostsConflictingReason, ready.Reason)
}

// startFreshHostTally starts what a manager that has just started has: a
// cache of the namespace, empty until its initial lists, and a host tally
// fed from it, as the manager wires them; it leads at once.
func startFreshHostTally(t *testing.T, ns string) *hostTally {
	t.Helper()
	options := CacheOptions(ns, "")
	options.Scheme = testEnv.Scheme
	freshCache, err := cache.New(testEnv.Config, options)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cacheDone, tallyDone := make(chan error, 1), make(chan error, 1)
	go func() { cacheDone <- freshCache.Start(ctx) }()
	elected := make(chan struct{})
	close(elected)
	freshClient, err := client.New(testEnv.Config, client.Options{Scheme: testEnv.Scheme, Cache: &client.CacheOptions{Reader: freshCache}})
	require.NoError(t, err)
	hosts := newHostTally(freshCache, freshClient, &baremetal.Templates{Reader: freshClient}, false, elected)
	go func() { tallyDone <- hosts.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		assert.NoError(t, <-tallyDone)
		assert.NoError(t, <-cacheDone)
	})
	return hosts
}
