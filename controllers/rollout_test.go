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
	capm3 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/baremetal"
	"github.com/capm3-preprov/capm3-preprov/template"
	"github.com/capm3-preprov/capm3-preprov/test/framework/fixtures"
)

// A CAPI rollout of a network change: a new Metal3DataTemplate and a new
// Metal3MachineTemplate, the MachineDeployment pointed at the new one, the
// old one kept. The host is re-rendered from the new one, in place, and the
// old one is reported once as a left-over, not as a conflict.
func TestRolloutLeftOverDoesNotConflict(t *testing.T) {
	ns := newNamespace(t)
	create(t,
		fixtures.Pool(ns, "provisioning", "192.0.2.10", "192.0.2.20", "192.0.2.1"),
		fixtures.DataTemplate(ns, "data-v1", fixtures.PoolNetworkData("provisioning")),
		fixtures.MachineTemplate(ns, "workers-v1", "data-v1", workers),
		fixtures.MachineDeployment(ns, "md-0", "workers-v1"),
		fixtures.Host(ns, "node-0", "52:54:00:aa:bb:01", workers),
	)
	before := waitForNetworkData(t, ns, "node-0")
	secret := &corev1.Secret{}
	secretKey := client.ObjectKey{Namespace: ns, Name: "node-0-preprov-networkdata"}
	require.NoError(t, k8sClient.Get(context.Background(), secretKey, secret))

	jumbo := fixtures.PoolNetworkData("provisioning")
	jumbo.Links.Ethernets[0].MTU = 9000
	rollOut(t, ns, jumbo, workers)

	require.EventuallyWithT(t, func(c *assert.CollectT) {
		after := readNetworkData(c, ns, "node-0")
		assert.InDelta(c, 9000, after["links"].([]any)[0].(map[string]any)["mtu"], 0)
		assert.Equal(c, before["networks"], after["networks"], "the host's address changed")
		assert.Equal(c, "Metal3MachineTemplate/workers-v2", getHost(c, ns, "node-0").Annotations[preprovv1.TemplateAnnotation])
	}, waitTimeout, pollInterval)
	// Until the MachineDeployment pointed at it, the new template was the
	// one set aside, which has its own event.
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		var notes []string
		for _, event := range hostEvents(c, ns, "node-0") {
			if event.Reason == baremetal.ReasonLeftOverTemplates && strings.Contains(event.Note, "workers-v2 governs") {
				notes = append(notes, event.Note)
				assert.Nil(c, event.Series, "the left-over event was repeated")
			}
		}
		require.Len(c, notes, 1)
		assert.Contains(c, notes[0], "MachineDeployment/md-0")
		assert.Contains(c, notes[0], "Metal3MachineTemplate/workers-v1")
	}, waitTimeout, pollInterval)
	updated := &corev1.Secret{}
	require.NoError(t, k8sClient.Get(context.Background(), secretKey, updated))
	assert.Equal(t, secret.UID, updated.UID, "the Secret was recreated instead of updated")

	for _, event := range hostEvents(t, ns, "node-0") {
		assert.NotEqual(t, baremetal.ReasonTemplateConflict, event.Reason, "a rollout was reported as a conflict")
	}
}

// An image-only rollout keeps the data template: both Metal3MachineTemplates
// render the same network data, whoever references them.
func TestMachineTemplatesWithTheSameDataDoNotConflict(t *testing.T) {
	ns := newNamespace(t)
	create(t,
		fixtures.DataTemplate(ns, "static", fixtures.StaticNetworkData()),
		fixtures.MachineTemplate(ns, "workers-v1", "static", workers),
		imageRollout(fixtures.MachineTemplate(ns, "workers-v2", "static", workers)),
		fixtures.Host(ns, "node-0", "52:54:00:aa:bb:01", workers),
	)
	waitForNetworkData(t, ns, "node-0")
	for _, event := range hostEvents(t, ns, "node-0") {
		assert.NotEqual(t, baremetal.ReasonTemplateConflict, event.Reason)
	}
}

// --all-machine-templates with two selector-less templates, the control
// plane's and the workers', is the same case: they select every host.
func TestAllMachineTemplatesWithoutSelectors(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct {
		name string
		// controlPlaneData is the data template of the control plane's
		// Metal3MachineTemplate; the workers' is "workers-data".
		controlPlaneData string
		// deployment references the workers' template.
		deployment bool
		phase      baremetal.Phase
		template   string
	}{
		{name: "same data template", controlPlaneData: "workers-data", phase: baremetal.PhaseReady},
		{name: "different data, a MachineDeployment and a KubeadmControlPlane each reference one",
			controlPlaneData: "control-plane-data", deployment: true, phase: baremetal.PhaseConflict},
		{name: "different data, only the KubeadmControlPlane references one",
			controlPlaneData: "control-plane-data", phase: baremetal.PhaseReady, template: "Metal3MachineTemplate/control-plane"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ns := newNamespace(t)
			jumbo := fixtures.StaticNetworkData()
			jumbo.Links.Ethernets[0].MTU = 9000
			controlPlane := fixtures.MachineTemplate(ns, "control-plane", tt.controlPlaneData, nil)
			worker := fixtures.MachineTemplate(ns, "workers", "workers-data", nil)
			for _, m3mt := range []*capm3.Metal3MachineTemplate{controlPlane, worker} {
				m3mt.Annotations, m3mt.Spec.Template.Spec.HostSelector = nil, nil
			}
			create(t,
				fixtures.DataTemplate(ns, "workers-data", fixtures.StaticNetworkData()),
				fixtures.DataTemplate(ns, "control-plane-data", jumbo),
				controlPlane, worker,
				fixtures.KubeadmControlPlane(ns, "kcp", "control-plane"),
				fixtures.Host(ns, "node-0", "52:54:00:aa:bb:01", workers),
			)
			if tt.deployment {
				create(t, fixtures.MachineDeployment(ns, "md-0", "workers"))
			}
			all, _ := countingHostManager(t, true)
			outcome, err := all.Reconcile(ctx, getHost(t, ns, "node-0"))
			require.NoError(t, err)
			assert.Equal(t, tt.phase, outcome.Phase, outcome.Message)
			if tt.template != "" {
				assert.Equal(t, tt.template, outcome.Template.String())
				assert.Equal(t, []template.Ref{{Kind: preprovv1.KindMachineTemplate, Name: "workers"}}, outcome.LeftOvers)
			}
		})
	}
}

// imageRollout changes only the image of a Metal3MachineTemplate.
// rollOut rolls the MachineDeployment md-0 out to a new Metal3MachineTemplate
// workers-v2 with a new Metal3DataTemplate data-v2, as a user changes the
// network data: CAPM3 refuses edits of a data template's networkData.
func rollOut(t *testing.T, ns string, networkData *capm3.NetworkData, selector map[string]string) {
	t.Helper()
	create(t,
		fixtures.DataTemplate(ns, "data-v2", networkData),
		fixtures.MachineTemplate(ns, "workers-v2", "data-v2", selector),
	)
	deployment := &clusterv1.MachineDeployment{}
	require.NoError(t, k8sClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "md-0"}, deployment))
	original := deployment.DeepCopy()
	deployment.Spec.Template.Spec.InfrastructureRef.Name = "workers-v2"
	require.NoError(t, k8sClient.Patch(context.Background(), deployment, client.MergeFrom(original)))
}

func imageRollout(m3mt *capm3.Metal3MachineTemplate) *capm3.Metal3MachineTemplate {
	m3mt.Spec.Template.Spec.Image.URL = "http://images.example.com/node-v2.qcow2"
	return m3mt
}

// A provisioned host set up from a left-over keeps its Secret when the
// rollout renders different data: drift is reported, as for any template
// change (a Metal3MachineTemplate has no Update policy).
func TestRolloutReportsDriftOnProvisionedHosts(t *testing.T) {
	ns := newNamespace(t)
	create(t,
		fixtures.DataTemplate(ns, "data-v1", fixtures.StaticNetworkData()),
		fixtures.MachineTemplate(ns, "workers-v1", "data-v1", workers),
		fixtures.MachineDeployment(ns, "md-0", "workers-v1"),
		fixtures.Host(ns, "node-0", "52:54:00:aa:bb:01", workers),
	)
	before := waitForNetworkData(t, ns, "node-0")
	host := getHost(t, ns, "node-0")
	host.Status.Provisioning.State = bmov1alpha1.StateProvisioned
	require.NoError(t, k8sClient.Status().Update(context.Background(), host))

	jumbo := fixtures.StaticNetworkData()
	jumbo.Links.Ethernets[0].MTU = 9000
	rollOut(t, ns, jumbo, workers)

	require.EventuallyWithT(t, func(c *assert.CollectT) {
		var drift string
		for _, event := range hostEvents(c, ns, "node-0") {
			if event.Reason == baremetal.ReasonNetworkDataDrift {
				drift = event.Note
			}
		}
		assert.Contains(c, drift, "Metal3MachineTemplate/workers-v2 now renders different network data")
	}, waitTimeout, pollInterval)
	assert.Equal(t, before, readNetworkData(t, ns, "node-0"), "a provisioned host's Secret was changed")
}
