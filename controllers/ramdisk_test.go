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
	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/baremetal"
	"github.com/capm3-preprov/capm3-preprov/test/framework/fixtures"
)

// A host whose BMC boots the ramdisk over the network (PXE) needs DHCP: it
// is warned about once, counted in the hosts metric, and set up all the same.
func TestHostThatBootsOverTheNetworkIsWarnedOnceAndSetUp(t *testing.T) {
	ns := newNamespace(t)
	racked := map[string]string{"rack": "pxe"}
	pxe := fixtures.Host(ns, "pxe-0", "52:54:00:aa:bb:01", racked)
	pxe.Spec.BMC.Address = "ipmi://192.0.2.1:6230"
	media := fixtures.Host(ns, "media-0", "52:54:00:aa:bb:02", racked)
	// The pool comes later: the host first fails, then waits, then is
	// ready, and is warned once through all of it.
	create(t, fixtures.PreprovisioningTemplate(ns, "rack", racked, fixtures.PoolNetworkData("late")), pxe, media)
	waitForEvent(t, ns, "pxe-0", baremetal.ReasonIPClaimFailed)
	note := waitForEvent(t, ns, "pxe-0", baremetal.ReasonBootNeedsDHCP)
	assert.Contains(t, note, "ipmi://")
	assert.Contains(t, note, "needs DHCP")
	assert.Contains(t, note, "redfish-virtualmedia://")

	create(t, fixtures.Pool(ns, "late", "192.0.2.10", "192.0.2.20", "192.0.2.1"))
	waitForNetworkData(t, ns, "pxe-0")
	waitForNetworkData(t, ns, "media-0")
	waitForEvent(t, ns, "pxe-0", baremetal.ReasonNetworkDataSet)
	// The template's status is written after the hosts' outcomes, and so
	// after any event of theirs.
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Equal(c, ptr.To(int32(2)), getTemplate(c, ns, "rack").Status.ReadyHosts)
	}, waitTimeout, pollInterval)

	var warnings []string
	for _, event := range hostEvents(t, ns, "pxe-0") {
		if event.Reason == baremetal.ReasonBootNeedsDHCP {
			assert.Equal(t, corev1.EventTypeWarning, event.Type)
			assert.Nil(t, event.Series, "a second warning with the same reason would have made a series")
			warnings = append(warnings, event.Note)
		}
	}
	assert.Len(t, warnings, 1, "one warning through failed, waiting and ready")
	for _, event := range hostEvents(t, ns, "media-0") {
		assert.NotEqual(t, baremetal.ReasonBootNeedsDHCP, event.Reason, "virtual media needs no DHCP")
	}

	require.EventuallyWithT(t, func(c *assert.CollectT) {
		families, err := metrics.Registry.Gather()
		require.NoError(c, err)
		assert.Positive(c, hostsGauge(families, string(baremetal.PhaseReady), "true"))
		assert.Positive(c, hostsGauge(families, string(baremetal.PhaseReady), "false"))
	}, waitTimeout, pollInterval)
}

// bondNetworkData is two NICs in an LACP bond with an IPv4 address from the
// pool. CAPM3's schema requires a bond parameter, and only takes objects.
func bondNetworkData(pool string) *capm3.NetworkData {
	nd := fixtures.PoolNetworkData(pool)
	links := nd.Links
	links.Ethernets = append(links.Ethernets, capm3.NetworkDataLinkEthernet{
		Type: "phy", Id: "eno2", MTU: 1500, MACAddress: &capm3.NetworkLinkEthernetMac{String: "52:54:00:cc:dd:02"},
	})
	links.Bonds = []capm3.NetworkDataLinkBond{{
		Id: "bond0", BondMode: "802.3ad", BondXmitHashPolicy: "layer3+4", MTU: 1500,
		BondLinks:  []string{"enp1s0", "eno2"},
		MACAddress: &capm3.NetworkLinkEthernetMac{String: "52:54:00:cc:dd:02"},
		Parameters: []capm3.NetworkDataLinkBondParam{{Name: "options", Value: apiextensionsv1.JSON{Raw: []byte(`{"miimon":100}`)}}},
	}}
	nd.Networks.IPv4[0].Link = "bond0"
	return nd
}

// Bond parameters of our template reach the Secret as the scalars the
// network tools read. With a dataTemplateRef only the controller sees the
// bonds they name: a wrong bond id is reported on the template and the host.
func TestBondParametersReachTheSecret(t *testing.T) {
	ns := newNamespace(t)
	racked := map[string]string{"rack": "bonded"}
	template := fixtures.PreprovisioningTemplate(ns, "bonded", racked, nil)
	template.Spec.DataTemplateRef = &corev1.LocalObjectReference{Name: "bonded"}
	template.Spec.BondParameters = map[string]map[string]intstr.IntOrString{
		"bond1": {"miimon": intstr.FromInt32(100), "lacp_rate": intstr.FromString("fast")},
	}
	create(t,
		fixtures.Pool(ns, "provisioning", "192.0.2.10", "192.0.2.20", "192.0.2.1"),
		fixtures.DataTemplate(ns, "bonded", bondNetworkData("provisioning")),
		template,
		fixtures.Host(ns, "node-0", "52:54:00:aa:bb:01", racked),
	)
	note := waitForEvent(t, ns, "node-0", baremetal.ReasonRenderFailed)
	assert.Contains(t, note, `spec.bondParameters[bond1]: names no bond of spec.networkData.links.bonds (it has "bond0")`)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		ready := templateReady(c, getTemplate(c, ns, "bonded"))
		assert.Equal(c, preprovv1.InvalidTemplateReason, ready.Reason)
		assert.Contains(c, ready.Message, "spec.bondParameters[bond1]: names no bond")
	}, waitTimeout, pollInterval)
	assertUntouched(t, ns, "node-0", preprovv1.PausedForPreprovisioning)

	template = getTemplate(t, ns, "bonded")
	original := template.DeepCopy()
	template.Spec.BondParameters = map[string]map[string]intstr.IntOrString{
		"bond0": {"miimon": intstr.FromInt32(100), "lacp_rate": intstr.FromString("fast")},
	}
	// A patch: the template's status may be written between the read and this write.
	require.NoError(t, k8sClient.Patch(context.Background(), template, client.MergeFrom(original)))

	networkData := waitForNetworkData(t, ns, "node-0")
	var bond map[string]any
	for _, link := range networkData["links"].([]any) {
		if link.(map[string]any)["id"] == "bond0" {
			bond = link.(map[string]any)
		}
	}
	require.NotNil(t, bond, "links: %v", networkData["links"])
	assert.InDelta(t, 100, bond["bond_miimon"], 0)
	assert.Equal(t, "fast", bond["bond_lacp_rate"])
	assert.Equal(t, "layer3+4", bond["bond_xmit_hash_policy"])
	assert.Equal(t, map[string]any{"miimon": float64(100)}, bond["bond_options"], "CAPM3's parameter is rendered as CAPM3 does")
	network := networkData["networks"].([]any)[0].(map[string]any)
	assert.Equal(t, "provisioning", network["network_id"], "Ironic requires network_id")
}

// CAPM3 claims no pool for a route gateway fromPoolAnnotation on a DHCP or
// SLAAC network and fails at provisioning: a Metal3DataTemplate saying so is
// refused before the host is touched.
func TestRouteGatewayAnnotationOnADHCPNetworkIsRefused(t *testing.T) {
	ns := newNamespace(t)
	networkData := fixtures.StaticNetworkData()
	networkData.Networks.IPv6SLAAC[0].Routes = []capm3.NetworkDataRoutev6{{
		Network: "::", Prefix: ptr.To(int32(0)),
		Gateway: capm3.NetworkGatewayv6{FromPoolAnnotation: capm3.FromPoolAnnotation{Object: "baremetalhost", Annotation: "pool.example.com/gw"}},
	}}
	racked := map[string]string{"rack": "slaac"}
	template := fixtures.PreprovisioningTemplate(ns, "slaac", racked, nil)
	template.Spec.DataTemplateRef = &corev1.LocalObjectReference{Name: "slaac"}
	host := fixtures.Host(ns, "node-0", "52:54:00:aa:bb:01", racked)
	host.Annotations["pool.example.com/gw"] = "gateways"
	create(t, fixtures.DataTemplate(ns, "slaac", networkData), template, host)

	const field = "spec.networkData.networks.ipv6SLAAC[id=provisioning].routes[0].gateway.fromPoolAnnotation"
	note := waitForEvent(t, ns, "node-0", baremetal.ReasonRenderFailed)
	assert.Contains(t, note, field+": is not supported on a route of an ipv6SLAAC network")
	assert.Contains(t, note, "CAPM3 claims no address from that pool there")
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		ready := templateReady(c, getTemplate(c, ns, "slaac"))
		assert.Equal(c, preprovv1.InvalidTemplateReason, ready.Reason)
		assert.Contains(c, ready.Message, field)
	}, waitTimeout, pollInterval)
	assertUntouched(t, ns, "node-0", preprovv1.PausedForPreprovisioning)
	claims := &ipamv1.IPClaimList{}
	require.NoError(t, k8sClient.List(context.Background(), claims, client.InNamespace(ns)))
	assert.Empty(t, claims.Items, "no address is claimed for a template that cannot be used")
}

// hostsGauge is capm3_preprov_hosts for a phase and needs_dhcp value.
func hostsGauge(families []*dto.MetricFamily, phase, needsDHCP string) float64 {
	for _, family := range families {
		if family.GetName() != "capm3_preprov_hosts" {
			continue
		}
		for _, metric := range family.GetMetric() {
			labels := map[string]string{}
			for _, label := range metric.GetLabel() {
				labels[label.GetName()] = label.GetValue()
			}
			if labels["phase"] == phase && labels["needs_dhcp"] == needsDHCP {
				return metric.GetGauge().GetValue()
			}
		}
	}
	return 0
}
