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

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/baremetal"
)

// A host that BMO leaves inspecting long after we unpaused it gets a
// Warning, is counted by its template, and is cleared once BMO moves it on.
func TestInspectionThatStallsIsReportedAndClears(t *testing.T) {
	ns := newNamespace(t)
	setUpRackedHost(t, ns)
	require.NotEmpty(t, getHost(t, ns, "node-0").Annotations[preprovv1.UnpausedAtAnnotation])

	// BMO inspects the host, and we unpaused it an hour ago.
	setProvisioningState(t, ns, "node-0", bmov1alpha1.StateInspecting)
	annotateHost(t, ns, "node-0", preprovv1.UnpausedAtAnnotation, time.Now().Add(-time.Hour).UTC().Format(time.RFC3339))

	note := waitForEvent(t, ns, "node-0", baremetal.ReasonInspectionStalled)
	assert.Contains(t, note, "still inspecting")
	assert.Contains(t, note, "glean")
	assert.Contains(t, note, "virtual media")
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Equal(c, baremetal.ReasonInspectionStalled, getHost(c, ns, "node-0").Annotations[preprovv1.ProblemAnnotation])
		template := getTemplate(c, ns, "rack-r1")
		assert.Equal(c, ptr.To(int32(1)), template.Status.StalledHosts)
		assert.Equal(c, ptr.To(int32(1)), template.Status.ReadyHosts)
		assert.Contains(c, templateReady(c, template).Message, "do not get past inspection")
	}, waitTimeout, pollInterval)

	setProvisioningState(t, ns, "node-0", bmov1alpha1.StateAvailable)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.NotContains(c, getHost(c, ns, "node-0").Annotations, preprovv1.ProblemAnnotation)
		assert.Equal(c, ptr.To(int32(0)), getTemplate(c, ns, "rack-r1").Status.StalledHosts)
	}, waitTimeout, pollInterval)
}

// The stall is decided on the manager's clock: before the timeout the host
// is only looked at again when it is up; after it, one write and one event.
func TestInspectionStallOnTheManagersClock(t *testing.T) {
	ns := newNamespace(t)
	setUpRackedHost(t, ns)
	// The running manager leaves the host to this test from now on.
	annotateHost(t, ns, "node-0", clusterv1.PausedAnnotation, "")
	unpausedAt := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	annotateHost(t, ns, "node-0", preprovv1.UnpausedAtAnnotation, unpausedAt.Format(time.RFC3339))
	setProvisioningState(t, ns, "node-0", bmov1alpha1.StateRegistering)

	manager, writes := countingHostManager(t, false)
	clock := clocktesting.NewFakePassiveClock(unpausedAt.Add(10 * time.Minute))
	manager.Clock, manager.InspectionStallTimeout = clock, 15*time.Minute
	recorder := manager.Recorder.(*events.FakeRecorder)
	reconcile := func() baremetal.Outcome {
		outcome, err := manager.Reconcile(context.Background(), getHost(t, ns, "node-0"))
		require.NoError(t, err)
		return outcome
	}

	outcome := reconcile()
	assert.Equal(t, baremetal.PhaseReady, outcome.Phase)
	assert.False(t, outcome.InspectionStalled)
	assert.Equal(t, 5*time.Minute, outcome.RequeueAfter)
	assert.Empty(t, writes.Writes())
	assert.Empty(t, recorder.Events)

	clock.SetTime(unpausedAt.Add(15 * time.Minute))
	for range 2 {
		outcome = reconcile()
		assert.True(t, outcome.InspectionStalled)
	}
	assert.Equal(t, []string{"patch BareMetalHost: 1"}, writes.Writes(), "the stall is recorded once")
	require.Len(t, recorder.Events, 1)
	assert.Contains(t, <-recorder.Events, "Warning "+baremetal.ReasonInspectionStalled)

	setProvisioningState(t, ns, "node-0", bmov1alpha1.StatePreparing)
	outcome = reconcile()
	assert.False(t, outcome.InspectionStalled)
	assert.Equal(t, []string{"patch BareMetalHost: 2"}, writes.Writes(), "the stall is cleared")
	assert.NotContains(t, getHost(t, ns, "node-0").Annotations, preprovv1.ProblemAnnotation)
	assert.Empty(t, recorder.Events)
}

// A host sent back to inspection long after we unpaused it (the
// inspect.metal3.io annotation, an externally provisioned host inspected)
// is timed from when BMO started inspecting it again, not from the unpause.
func TestInspectionAgainIsTimedFromItsOwnStart(t *testing.T) {
	ns := newNamespace(t)
	setUpRackedHost(t, ns)
	// Real times, so the running manager, on the real clock, finds no
	// stall either and leaves the host as it is.
	reinspected := time.Now().Add(-time.Minute).UTC().Truncate(time.Second)
	unpausedAt := reinspected.Add(-24 * time.Hour)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		host := getHost(c, ns, "node-0")
		host.Status.Provisioning.State = bmov1alpha1.StateInspecting
		host.Status.OperationHistory = bmov1alpha1.OperationHistory{
			Register: bmov1alpha1.OperationMetric{Start: metav1.NewTime(unpausedAt), End: metav1.NewTime(unpausedAt.Add(time.Minute))},
			Inspect:  bmov1alpha1.OperationMetric{Start: metav1.NewTime(reinspected)},
		}
		require.NoError(c, k8sClient.Status().Update(context.Background(), host))
	}, waitTimeout, pollInterval)
	annotateHost(t, ns, "node-0", preprovv1.UnpausedAtAnnotation, unpausedAt.Format(time.RFC3339))

	manager, writes := countingHostManager(t, false)
	clock := clocktesting.NewFakePassiveClock(reinspected.Add(time.Minute))
	manager.Clock, manager.InspectionStallTimeout = clock, 15*time.Minute
	recorder := manager.Recorder.(*events.FakeRecorder)
	outcome, err := manager.Reconcile(context.Background(), getHost(t, ns, "node-0"))
	require.NoError(t, err)
	assert.False(t, outcome.InspectionStalled)
	assert.Equal(t, 14*time.Minute, outcome.RequeueAfter)
	assert.Empty(t, writes.Writes())
	assert.Empty(t, recorder.Events)

	clock.SetTime(reinspected.Add(15 * time.Minute))
	outcome, err = manager.Reconcile(context.Background(), getHost(t, ns, "node-0"))
	require.NoError(t, err)
	assert.True(t, outcome.InspectionStalled)
	require.Len(t, recorder.Events, 1)
	event := <-recorder.Events
	assert.Contains(t, event, "Warning "+baremetal.ReasonInspectionStalled)
	assert.Contains(t, event, "still inspecting 15m0s after BMO started inspecting it (at "+
		reinspected.Format(time.RFC3339)+", from its status.operationHistory)")
}

func setProvisioningState(t *testing.T, ns, name string, state bmov1alpha1.ProvisioningState) {
	t.Helper()
	host := getHost(t, ns, name)
	host.Status.Provisioning.State = state
	require.NoError(t, k8sClient.Status().Update(context.Background(), host))
}

func annotateHost(t *testing.T, ns, name, key, value string) {
	t.Helper()
	host := getHost(t, ns, name)
	original := host.DeepCopy()
	host.Annotations[key] = value
	require.NoError(t, k8sClient.Patch(context.Background(), host, client.MergeFrom(original)))
}
