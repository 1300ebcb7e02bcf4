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

	capm3 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/baremetal"
	"github.com/capm3-preprov/capm3-preprov/test/framework/fixtures"
)

// This suite's control plane runs no webhook of ours, as the namespaced
// install, or a template created before the install: what our webhook
// refuses, the controller enforces. An invalid template selects no host, so
// a valid template that selects the same host sets it up without conflict,
// and the invalid one says why in its Ready condition and a Warning event.
func TestInvalidTemplatesSelectNoHost(t *testing.T) {
	racked := map[string]string{"rack": "r1"}
	undefinedLink := fixtures.StaticNetworkData()
	undefinedLink.Networks.IPv6SLAAC[0].Link = "eth9"
	tests := []struct {
		name string
		spec preprovv1.Metal3PreprovisioningTemplateSpec
		// problem is part of the reason given.
		problem string
	}{
		{
			name:    "empty host selector",
			spec:    preprovv1.Metal3PreprovisioningTemplateSpec{NetworkData: fixtures.StaticNetworkData()},
			problem: "selects every BareMetalHost of the namespace",
		},
		{
			name: "invalid selector operator",
			spec: preprovv1.Metal3PreprovisioningTemplateSpec{
				HostSelector: capm3.HostSelector{MatchExpressions: []capm3.HostSelectorRequirement{{Key: "rack", Operator: "near", Values: []string{"r1"}}}},
				NetworkData:  fixtures.StaticNetworkData(),
			},
			problem: `Unsupported value: "near"`,
		},
		{
			name: "both networkData and dataTemplateRef",
			spec: preprovv1.Metal3PreprovisioningTemplateSpec{
				HostSelector:    capm3.HostSelector{MatchLabels: racked},
				NetworkData:     fixtures.StaticNetworkData(),
				DataTemplateRef: &corev1.LocalObjectReference{Name: "static"},
			},
			problem: "keep exactly one of spec.networkData",
		},
		{
			name:    "neither networkData nor dataTemplateRef",
			spec:    preprovv1.Metal3PreprovisioningTemplateSpec{HostSelector: capm3.HostSelector{MatchLabels: racked}},
			problem: "set exactly one of spec.networkData",
		},
		{
			name: "reference to an undefined link",
			spec: preprovv1.Metal3PreprovisioningTemplateSpec{
				HostSelector: capm3.HostSelector{MatchLabels: racked},
				NetworkData:  undefinedLink,
			},
			problem: "eth9",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ns := newNamespace(t)
			invalid := &preprovv1.Metal3PreprovisioningTemplate{ObjectMeta: metaNamed(ns, "invalid"), Spec: tt.spec}
			create(t,
				fixtures.DataTemplate(ns, "static", fixtures.StaticNetworkData()),
				invalid,
				fixtures.MachineTemplate(ns, "workers", "static", racked),
				fixtures.Host(ns, "node-0", "52:54:00:aa:bb:01", racked),
			)

			waitForNetworkData(t, ns, "node-0")
			assert.Equal(t, "Metal3MachineTemplate/workers", getHost(t, ns, "node-0").Annotations[preprovv1.TemplateAnnotation])
			for _, event := range hostEvents(t, ns, "node-0") {
				assert.NotEqual(t, baremetal.ReasonTemplateConflict, event.Reason, "an invalid template selected the host")
			}
			require.EventuallyWithT(t, func(c *assert.CollectT) {
				ready := templateReady(c, getTemplate(c, ns, "invalid"))
				assert.Equal(c, preprovv1.InvalidTemplateReason, ready.Reason)
				assert.Contains(c, ready.Message, tt.problem)
				assert.Contains(c, ready.Message, "selects no host")
			}, waitTimeout, pollInterval)
			require.EventuallyWithT(t, func(c *assert.CollectT) {
				events := templateEvents(c, ns, "invalid")
				require.Len(c, events, 1)
				assert.Equal(c, corev1.EventTypeWarning, events[0].Type)
				assert.Equal(c, baremetal.ReasonTemplateInvalid, events[0].Reason)
				assert.Contains(c, events[0].Note, tt.problem)
			}, waitTimeout, pollInterval)
		})
	}
}

func templateEvents(t require.TestingT, namespace, name string) []eventsv1.Event {
	list := &eventsv1.EventList{}
	require.NoError(t, k8sClient.List(context.Background(), list, client.InNamespace(namespace)))
	var events []eventsv1.Event
	for _, event := range list.Items {
		if event.Regarding.Kind == preprovv1.KindPreprovisioningTemplate && event.Regarding.Name == name {
			events = append(events, event)
		}
	}
	return events
}
