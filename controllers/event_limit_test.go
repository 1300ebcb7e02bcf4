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
	"fmt"
	"strings"
	"testing"

	capm3 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/baremetal"
	"github.com/capm3-preprov/capm3-preprov/test/framework/fixtures"
)

// The events API refuses a note over 1,024 characters, and client-go's
// recorder sends it anyway: the Warning of a host whose eight pools all fail
// at once still arrives, naming the first pools and counting the rest.
func TestWarningLongerThanAnEventTakesArrives(t *testing.T) {
	ns := newNamespace(t)
	racked := map[string]string{"rack": "r1"}
	// Pools that do not exist fail in the host's first reconcile, all
	// together: its first Warning of that reason is the long one. (Later
	// notes of the same reason only count in the first one's series.)
	networkData := fixtures.StaticNetworkData()
	for i := range 8 {
		networkData.Networks.IPv4 = append(networkData.Networks.IPv4, capm3.NetworkDataIPv4{
			ID: fmt.Sprintf("network-%d", i), Link: "enp1s0", IPAddressFromIPPool: fmt.Sprintf("provisioning-network-%d", i),
		})
	}
	create(t,
		fixtures.PreprovisioningTemplate(ns, "rack-r1", racked, networkData),
		fixtures.Host(ns, "node-0", "52:54:00:aa:bb:01", racked),
	)

	var warning string
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		for _, event := range hostEvents(c, ns, "node-0") {
			if event.Type == corev1.EventTypeWarning && event.Reason == baremetal.ReasonIPClaimFailed {
				warning = event.Note
			}
		}
		require.NotEmpty(c, warning, "no Warning yet")
	}, waitTimeout, pollInterval)
	assert.LessOrEqual(t, len(warning), baremetal.MaxEventNote)
	assert.Contains(t, warning, `IPPool "provisioning-network-0" does not exist`)
	assert.Regexp(t, `… and [1-7] more$`, warning)
	assert.NotContains(t, warning, `"provisioning-network-7"`)
	assert.Equal(t, baremetal.ReasonIPClaimFailed, getHost(t, ns, "node-0").Annotations[preprovv1.ProblemAnnotation])
}

// The Warning of an invalid template names each of its problems: with many,
// it is longer than an event may be, and still arrives, shortened, while
// the template's Ready condition keeps them all.
func TestInvalidTemplateWarningLongerThanAnEventTakesArrives(t *testing.T) {
	ns := newNamespace(t)
	networkData := fixtures.StaticNetworkData()
	for i := range 24 {
		networkData.Networks.IPv6SLAAC = append(networkData.Networks.IPv6SLAAC, capm3.NetworkDataIPv6DHCP{
			ID: fmt.Sprintf("slaac-%d", i), Link: fmt.Sprintf("undefined-link-%d", i),
		})
	}
	create(t, &preprovv1.Metal3PreprovisioningTemplate{ObjectMeta: metaNamed(ns, "invalid"), Spec: preprovv1.Metal3PreprovisioningTemplateSpec{
		HostSelector: capm3.HostSelector{MatchLabels: map[string]string{"rack": "r1"}}, NetworkData: networkData,
	}})

	require.EventuallyWithT(t, func(c *assert.CollectT) {
		ready := templateReady(c, getTemplate(c, ns, "invalid"))
		assert.Equal(c, preprovv1.InvalidTemplateReason, ready.Reason)
		assert.Greater(c, len(ready.Message), baremetal.MaxEventNote)
		assert.Contains(c, ready.Message, `"undefined-link-23"`)
	}, waitTimeout, pollInterval)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		events := templateEvents(c, ns, "invalid")
		require.Len(c, events, 1)
		assert.Equal(c, baremetal.ReasonTemplateInvalid, events[0].Reason)
		assert.LessOrEqual(c, len(events[0].Note), baremetal.MaxEventNote)
		assert.Contains(c, events[0].Note, `"undefined-link-0"`)
		assert.True(c, strings.HasSuffix(events[0].Note, "…"), events[0].Note)
	}, waitTimeout, pollInterval)
}
