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
	"regexp"
	"testing"

	capm3 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/baremetal"
	"github.com/capm3-preprov/capm3-preprov/test/framework/fixtures"
	"github.com/capm3-preprov/capm3-preprov/test/ipamstandin"
)

// The events API refuses a note over 1,024 characters: the Warning of a host
// whose six pools are all exhausted still arrives, naming the first pools
// and counting the rest.
func TestWarningLongerThanAnEventTakesArrives(t *testing.T) {
	ns := newNamespace(t)
	racked := map[string]string{"rack": "r1"}
	networkData := fixtures.StaticNetworkData()
	var objects []client.Object
	for i := range 6 {
		pool := fmt.Sprintf("provisioning-network-%d", i)
		// Its one address is taken by a pre-allocation.
		exhausted := fixtures.Pool(ns, pool, fmt.Sprintf("192.0.%d.10", i), fmt.Sprintf("192.0.%d.10", i), fmt.Sprintf("192.0.%d.1", i))
		exhausted.Spec.PreAllocations = map[string]ipamv1.IPAddressStr{"reserved": ipamv1.IPAddressStr(fmt.Sprintf("192.0.%d.10", i))}
		objects = append(objects, exhausted)
		networkData.Networks.IPv4 = append(networkData.Networks.IPv4, capm3.NetworkDataIPv4{
			ID: pool, Link: "enp1s0", IPAddressFromIPPool: pool,
		})
	}
	objects = append(objects,
		fixtures.PreprovisioningTemplate(ns, "rack-r1", racked, networkData),
		fixtures.Host(ns, "node-0", "52:54:00:aa:bb:01", racked),
	)
	create(t, objects...)

	// IPAM fails the claims one by one: the host's Warning lists the
	// failures seen so far, and the one of all six is over the limit.
	shortened := regexp.MustCompile(`… and [1-5] more$`)
	var warning string
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		for _, event := range hostEvents(c, ns, "node-0") {
			if event.Type == corev1.EventTypeWarning && event.Reason == baremetal.ReasonIPClaimFailed && shortened.MatchString(event.Note) {
				warning = event.Note
			}
		}
		require.NotEmpty(c, warning, "no shortened Warning yet")
	}, waitTimeout, pollInterval)
	assert.LessOrEqual(t, len(warning), baremetal.MaxEventNote)
	assert.Contains(t, warning, `IPPool "provisioning-network-0"`, "the first pool is named")
	assert.Contains(t, warning, ipamstandin.ExhaustedMessage)
	assert.Equal(t, baremetal.ReasonIPClaimFailed, getHost(t, ns, "node-0").Annotations[preprovv1.ProblemAnnotation])
}
