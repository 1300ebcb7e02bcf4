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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/capm3-preprov/capm3-preprov/baremetal"
	"github.com/capm3-preprov/capm3-preprov/ipam"
	"github.com/capm3-preprov/capm3-preprov/test/framework/fixtures"
)

// A host that stays failed or conflicting is reported once per outcome,
// not on every reconcile.
func TestFailedAndConflictingHostsAreReportedOncePerOutcome(t *testing.T) {
	ns := newNamespace(t)
	racked := map[string]string{"rack": "r1"}
	create(t,
		fixtures.PreprovisioningTemplate(ns, "rack-r1", racked, fixtures.PoolNetworkData("missing")),
		fixtures.Host(ns, "node-0", "52:54:00:aa:bb:01", racked),
	)
	manager, _ := countingHostManager(t, false)
	recorder := manager.Recorder.(*events.FakeRecorder)
	reconciler := &BareMetalHostReconciler{
		Client: k8sClient, Manager: manager,
		Sweeper: &ipam.Sweeper{Client: k8sClient, APIReader: k8sClient},
	}
	reconcileThrice := func() []string {
		for range 3 {
			_, err := reconciler.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKey{Namespace: ns, Name: "node-0"}})
			require.NoError(t, err)
		}
		var reported []string
		for len(recorder.Events) > 0 {
			reported = append(reported, <-recorder.Events)
		}
		return reported
	}

	reported := reconcileThrice()
	require.Len(t, reported, 1)
	assert.Contains(t, reported[0], "Warning "+baremetal.ReasonIPClaimFailed)

	create(t, fixtures.PreprovisioningTemplate(ns, "rack-r1-too", racked, fixtures.StaticNetworkData()))
	reported = reconcileThrice()
	require.Len(t, reported, 1)
	assert.Contains(t, reported[0], "Warning "+baremetal.ReasonTemplateConflict)
}

// BMO writes a host's status often; only what we read wakes the host.
func TestOnlyHostChangesWeReadReconcileTheHost(t *testing.T) {
	ns := newNamespace(t)
	create(t, fixtures.Host(ns, "node-0", "52:54:00:aa:bb:01", map[string]string{"rack": "nowhere"}))
	before := getHost(t, ns, "node-0")

	// What BMO writes as it registers and inspects a host.
	host := before.DeepCopy()
	host.Status.OperationalStatus = bmov1alpha1.OperationalStatusOK
	host.Status.LastUpdated = &metav1.Time{Time: before.CreationTimestamp.Add(5e9)}
	host.Status.ErrorMessage = "transient"
	host.Status.ErrorCount = 1
	host.Status.HardwareDetails = &bmov1alpha1.HardwareDetails{CPU: bmov1alpha1.CPU{Count: 8}, Hostname: "node-0"}
	require.NoError(t, k8sClient.Status().Update(context.Background(), host))
	bmoWrote := getHost(t, ns, "node-0")
	require.NotEqual(t, before.ResourceVersion, bmoWrote.ResourceVersion)
	assert.False(t, hostUpdatePasses(before, bmoWrote), "a status update BMO makes woke the host")

	// The power state tells whether a fast-track ramdisk still runs with
	// old network data: it wakes the host.
	powered := bmoWrote.DeepCopy()
	powered.Status.PoweredOn = true
	assert.True(t, hostUpdatePasses(bmoWrote, powered), "the host's power state did not wake it")

	changes := map[string]func(host *bmov1alpha1.BareMetalHost){
		"a label":       func(host *bmov1alpha1.BareMetalHost) { host.Labels["rack"] = "r1" },
		"an annotation": func(host *bmov1alpha1.BareMetalHost) { host.Annotations["example.com/mac"] = "52:54:00:aa:bb:ff" },
		"the boot MAC":  func(host *bmov1alpha1.BareMetalHost) { host.Spec.BootMACAddress = "52:54:00:aa:bb:02" },
		"the provisioning state": func(host *bmov1alpha1.BareMetalHost) {
			host.Status.Provisioning.State = bmov1alpha1.StateProvisioned
		},
		"the start of an inspection": func(host *bmov1alpha1.BareMetalHost) {
			host.Status.OperationHistory.Inspect.Start = metav1.Now()
		},
		"the NICs": func(host *bmov1alpha1.BareMetalHost) {
			host.Status.HardwareDetails.NIC = []bmov1alpha1.NIC{{Name: "enp1s0", MAC: "52:54:00:aa:bb:01"}}
		},
		"the deletion": func(host *bmov1alpha1.BareMetalHost) { host.DeletionTimestamp = &metav1.Time{} },
	}
	for what, change := range changes {
		changed := bmoWrote.DeepCopy()
		change(changed)
		assert.True(t, hostUpdatePasses(bmoWrote, changed), "a change of %s did not wake the host", what)
	}
}

func hostUpdatePasses(before, after *bmov1alpha1.BareMetalHost) bool {
	return hostChangedWhatWeRead.Update(event.UpdateEvent{ObjectOld: before, ObjectNew: after})
}
