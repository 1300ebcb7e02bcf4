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

	capm3 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/baremetal"
	"github.com/capm3-preprov/capm3-preprov/ipam"
	"github.com/capm3-preprov/capm3-preprov/test/framework/fixtures"
	"github.com/capm3-preprov/capm3-preprov/test/standins/ipamstandin"
)

var workers = map[string]string{"role": "worker"}

func TestStaticNetworkDataUnpausesHost(t *testing.T) {
	ns := newNamespace(t)
	create(t,
		fixtures.DataTemplate(ns, "static", fixtures.StaticNetworkData()),
		fixtures.MachineTemplate(ns, "workers", "static", workers),
		fixtures.Host(ns, "node-0", "52:54:00:aa:bb:01", workers),
	)

	networkData := waitForNetworkData(t, ns, "node-0")

	// The only ethernet link asks for a host interface and the host is not
	// inspected yet: its MAC is the boot MAC.
	links := networkData["links"].([]any)
	require.Len(t, links, 1)
	assert.Equal(t, "52:54:00:aa:bb:01", links[0].(map[string]any)["ethernet_mac_address"])
	networks := networkData["networks"].([]any)
	require.Len(t, networks, 1)
	assert.Equal(t, "ipv6_slaac", networks[0].(map[string]any)["type"])
	services := networkData["services"].([]any)
	require.Len(t, services, 1)
	assert.Equal(t, map[string]any{"type": "dns", "address": "2001:db8::53"}, services[0])

	host := getHost(t, ns, "node-0")
	assert.Equal(t, preprovv1.ManagedLabelValue, host.Labels[preprovv1.ManagedLabel])
	assert.Equal(t, "Metal3MachineTemplate/workers", host.Annotations[preprovv1.TemplateAnnotation])

	secret := &corev1.Secret{}
	require.NoError(t, k8sClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "node-0-preprov-networkdata"}, secret))
	assert.Equal(t, "baremetal", secret.Labels["environment.metal3.io"])
	assert.Equal(t, preprovv1.ManagedLabelValue, secret.Labels[preprovv1.ManagedLabel])
	require.Len(t, secret.OwnerReferences, 1)
	owner := secret.OwnerReferences[0]
	assert.Equal(t, host.UID, owner.UID)
	assert.Equal(t, "BareMetalHost", owner.Kind)
	assert.Nil(t, owner.Controller, "BMO must be woken by changes too: not a controller reference")

	claims := &ipamv1.IPClaimList{}
	require.NoError(t, k8sClient.List(context.Background(), claims, client.InNamespace(ns)))
	assert.Empty(t, claims.Items, "static network data needs no IPAM")

	note := waitForEvent(t, ns, "node-0", baremetal.ReasonNetworkDataSet)
	assert.Equal(t, `set up from Metal3MachineTemplate/workers: network data in Secret "node-0-preprov-networkdata"; `+
		`set spec.preprovisioningNetworkDataName and removed the pause metal3.io/preprovisioning`, note)
}

func TestIPAMNetworkDataForSeveralHosts(t *testing.T) {
	ns := newNamespace(t)
	createPooledWorkers(t, ns, "node-0", "node-1")

	seen := map[string]string{}
	for _, name := range []string{"node-0", "node-1"} {
		networkData := waitForNetworkData(t, ns, name)
		network := networkData["networks"].([]any)[0].(map[string]any)
		assert.Equal(t, "ipv4", network["type"])
		assert.Equal(t, "255.255.255.0", network["netmask"])
		route := network["routes"].([]any)[0].(map[string]any)
		assert.Equal(t, "192.0.2.1", route["gateway"])
		assert.Equal(t, []any{map[string]any{"type": "dns", "address": "192.0.2.53"}}, route["services"])

		ip := network["ip_address"].(string)
		assert.NotContains(t, seen, ip, "two hosts got the same address")
		seen[ip] = name

		claim := &ipamv1.IPClaim{}
		require.NoError(t, k8sClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name + "-provisioning"}, claim))
		host := getHost(t, ns, name)
		require.Len(t, claim.OwnerReferences, 1)
		assert.Equal(t, host.UID, claim.OwnerReferences[0].UID)
		assert.Equal(t, preprovv1.ManagedLabelValue, claim.Labels[preprovv1.ManagedLabel])
		assert.NotContains(t, claim.Labels, "infrastructure.cluster.x-k8s.io/data-name", "CAPM3 would delete the claim on deprovision")
		assert.NotContains(t, claim.Labels, "infrastructure.cluster.x-k8s.io/pool-name")

		address := &ipamv1.IPAddress{}
		require.NoError(t, k8sClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: claim.Status.Address.Name}, address))
		assert.Equal(t, ip, string(address.Spec.Address))
		note := waitForEvent(t, ns, name, baremetal.ReasonNetworkDataSet)
		assert.Contains(t, note, fmt.Sprintf(`IPClaim "%s-provisioning" has %s from IPPool "provisioning";`, name, ip))
		assertOneSetUpEvent(t, ns, name)
	}
	assert.ElementsMatch(t, []string{"192.0.2.10", "192.0.2.11"}, keys(seen))
}

func TestExhaustedPoolKeepsHostPausedUntilThePoolGrows(t *testing.T) {
	ns := newNamespace(t)
	pool := fixtures.Pool(ns, "tiny", "192.0.2.10", "192.0.2.10", "192.0.2.1")
	create(t,
		pool,
		fixtures.DataTemplate(ns, "pooled", fixtures.PoolNetworkData("tiny")),
		fixtures.MachineTemplate(ns, "workers", "pooled", workers),
		fixtures.Host(ns, "node-0", "52:54:00:aa:bb:01", workers),
	)
	first := waitForNetworkData(t, ns, "node-0")
	firstIP := first["networks"].([]any)[0].(map[string]any)["ip_address"]

	create(t, fixtures.Host(ns, "node-1", "52:54:00:aa:bb:02", workers))
	note := waitForEvent(t, ns, "node-1", baremetal.ReasonIPClaimFailed)
	assert.Contains(t, note, ipamstandin.ExhaustedMessage)
	assert.Contains(t, note, `IPPool "tiny"`)
	assertUntouched(t, ns, "node-1", preprovv1.PausedForPreprovisioning)

	require.NoError(t, k8sClient.Get(context.Background(), client.ObjectKeyFromObject(pool), pool))
	original := pool.DeepCopy()
	pool.Spec.Pools[0].End = ptr.To(ipamv1.IPAddressStr("192.0.2.11"))
	require.NoError(t, k8sClient.Patch(context.Background(), pool, client.MergeFrom(original)))

	second := waitForNetworkData(t, ns, "node-1")
	assert.Equal(t, "192.0.2.11", second["networks"].([]any)[0].(map[string]any)["ip_address"])
	again := waitForNetworkData(t, ns, "node-0")
	assert.Equal(t, firstIP, again["networks"].([]any)[0].(map[string]any)["ip_address"], "the first host's address changed")
}

func TestHostPausedBySomeoneElseIsUntouched(t *testing.T) {
	ns := newNamespace(t)
	create(t,
		fixtures.DataTemplate(ns, "static", fixtures.StaticNetworkData()),
		fixtures.MachineTemplate(ns, "workers", "static", workers),
	)
	foreign := fixtures.Host(ns, "moving", "52:54:00:aa:bb:01", workers)
	foreign.Annotations[preprovv1.PausedAnnotation] = "metal3.io/capm3"
	unpaused := fixtures.Host(ns, "running", "52:54:00:aa:bb:02", workers)
	delete(unpaused.Annotations, preprovv1.PausedAnnotation)
	create(t, foreign, unpaused, fixtures.Host(ns, "control", "52:54:00:aa:bb:03", workers))

	// The control host, in the same namespace and template, is done...
	waitForNetworkData(t, ns, "control")
	// ...and a reconcile of the others, with every write counted, is a no-op.
	manager, writes := countingHostManager(t, false)
	for _, name := range []string{"moving", "running"} {
		outcome, err := manager.Reconcile(context.Background(), getHost(t, ns, name))
		require.NoError(t, err)
		assert.Equal(t, baremetal.PhaseIgnored, outcome.Phase)
	}
	assert.Empty(t, writes.Writes())
	assertUntouched(t, ns, "moving", "metal3.io/capm3")
	assertUntouched(t, ns, "running", "")
}

func TestConflictingTemplatesLeaveHostUntouched(t *testing.T) {
	ns := newNamespace(t)
	racked := map[string]string{"role": "worker", "rack": "r1"}
	create(t,
		fixtures.Pool(ns, "provisioning", "192.0.2.10", "192.0.2.20", "192.0.2.1"),
		fixtures.DataTemplate(ns, "pooled", fixtures.PoolNetworkData("provisioning")),
		fixtures.MachineTemplate(ns, "workers", "pooled", workers),
		&preprovv1.Metal3PreprovisioningTemplate{
			ObjectMeta: metaNamed(ns, "rack-r1"),
			Spec: preprovv1.Metal3PreprovisioningTemplateSpec{
				HostSelector: capm3.HostSelector{MatchLabels: map[string]string{"rack": "r1"}},
				NetworkData:  fixtures.StaticNetworkData(),
			},
		},
		fixtures.Host(ns, "node-0", "52:54:00:aa:bb:01", racked),
	)

	note := waitForEvent(t, ns, "node-0", baremetal.ReasonTemplateConflict)
	assert.Contains(t, note, "Metal3MachineTemplate/workers")
	assert.Contains(t, note, "Metal3PreprovisioningTemplate/rack-r1")
	assertUntouched(t, ns, "node-0", preprovv1.PausedForPreprovisioning)
	claims := &ipamv1.IPClaimList{}
	require.NoError(t, k8sClient.List(context.Background(), claims, client.InNamespace(ns)))
	assert.Empty(t, claims.Items, "a conflicting host must not claim addresses")

	// Narrowing one template resolves the conflict.
	m3mt := &capm3.Metal3MachineTemplate{}
	require.NoError(t, k8sClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "workers"}, m3mt))
	original := m3mt.DeepCopy()
	m3mt.Spec.Template.Spec.HostSelector.MatchLabels["rack"] = "r2"
	require.NoError(t, k8sClient.Patch(context.Background(), m3mt, client.MergeFrom(original)))
	waitForNetworkData(t, ns, "node-0")
	assert.Equal(t, "Metal3PreprovisioningTemplate/rack-r1", getHost(t, ns, "node-0").Annotations[preprovv1.TemplateAnnotation])
}

func TestBadInputIsReportedAndFixable(t *testing.T) {
	tests := []struct {
		name        string
		networkData *capm3.NetworkData
		// dataTemplate is the name the Metal3MachineTemplate names; empty
		// means the data template is created as "data".
		dataTemplate string
		annotations  map[string]string
		reason       string
		noteHas      []string
		// fix makes the input good, so the host must then finish.
		fix func(t *testing.T, ns string)
	}{
		{
			name:        "unknown pool",
			networkData: fixtures.PoolNetworkData("missing"),
			reason:      baremetal.ReasonIPClaimFailed,
			noteHas:     []string{`IPPool "missing" does not exist`},
			fix: func(t *testing.T, ns string) {
				t.Helper()
				create(t, fixtures.Pool(ns, "missing", "192.0.2.10", "192.0.2.20", "192.0.2.1"))
			},
		},
		{
			name:         "missing Metal3DataTemplate",
			networkData:  fixtures.StaticNetworkData(),
			dataTemplate: "absent",
			reason:       baremetal.ReasonTemplateInvalid,
			noteHas:      []string{`Metal3DataTemplate "absent"`, "does not exist"},
			fix: func(t *testing.T, ns string) {
				t.Helper()
				create(t, fixtures.DataTemplate(ns, "absent", fixtures.StaticNetworkData()))
			},
		},
		{
			name:        "link referenced but not defined",
			networkData: withNetworkLink(fixtures.PoolNetworkData("provisioning"), "bond0"),
			reason:      baremetal.ReasonRenderFailed,
			noteHas:     []string{"bond0"},
			fix:         fixDataTemplate(fixtures.PoolNetworkData("provisioning")),
		},
		{
			name:        "malformed MAC annotation",
			networkData: withMAC(fixtures.StaticNetworkData(), &capm3.NetworkLinkEthernetMac{FromAnnotation: capm3.NetworkLinkEthernetMacFromAnnotation{Object: "baremetalhost", Annotation: "example.com/mac"}}),
			annotations: map[string]string{"example.com/mac": "not-a-mac"},
			reason:      baremetal.ReasonRenderFailed,
			noteHas:     []string{"example.com/mac", "not-a-mac"},
			fix: func(t *testing.T, ns string) {
				t.Helper()
				host := getHost(t, ns, "node-0")
				original := host.DeepCopy()
				host.Annotations["example.com/mac"] = "52:54:00:aa:bb:ff"
				require.NoError(t, k8sClient.Patch(context.Background(), host, client.MergeFrom(original)))
			},
		},
		{
			name:        "MAC from a Machine, which does not exist yet",
			networkData: withMAC(fixtures.StaticNetworkData(), &capm3.NetworkLinkEthernetMac{FromAnnotation: capm3.NetworkLinkEthernetMacFromAnnotation{Object: "machine", Annotation: "mac"}}),
			reason:      baremetal.ReasonRenderFailed,
			noteHas:     []string{"machine"},
			fix:         fixDataTemplate(fixtures.StaticNetworkData()),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ns := newNamespace(t)
			dataTemplate := tt.dataTemplate
			if dataTemplate == "" {
				dataTemplate = "data"
				create(t, fixtures.DataTemplate(ns, "data", tt.networkData))
			}
			host := fixtures.Host(ns, "node-0", "52:54:00:aa:bb:01", workers)
			for key, value := range tt.annotations {
				host.Annotations[key] = value
			}
			// A good host next to the bad one, with a template of its own.
			good := fixtures.Host(ns, "good", "52:54:00:aa:bb:02", map[string]string{"role": "good"})
			create(t,
				fixtures.Pool(ns, "provisioning", "192.0.2.10", "192.0.2.20", "192.0.2.1"),
				fixtures.MachineTemplate(ns, "workers", dataTemplate, workers),
				fixtures.DataTemplate(ns, "good", fixtures.StaticNetworkData()),
				fixtures.MachineTemplate(ns, "good", "good", map[string]string{"role": "good"}),
				host, good,
			)

			note := waitForEvent(t, ns, "node-0", tt.reason)
			for _, part := range tt.noteHas {
				assert.Contains(t, note, part)
			}
			waitForNetworkData(t, ns, "good")
			assertUntouched(t, ns, "node-0", preprovv1.PausedForPreprovisioning)

			tt.fix(t, ns)
			waitForNetworkData(t, ns, "node-0")
		})
	}
}

func TestSecondReconcileOfAFinishedHostWritesNothing(t *testing.T) {
	ns := newNamespace(t)
	createPooledWorkers(t, ns, "node-0")
	waitForNetworkData(t, ns, "node-0")

	manager, writes := countingHostManager(t, false)
	recorder := manager.Recorder.(*events.FakeRecorder)
	outcome, err := manager.Reconcile(context.Background(), getHost(t, ns, "node-0"))
	require.NoError(t, err)
	assert.Equal(t, baremetal.PhaseReady, outcome.Phase)
	assert.Empty(t, writes.Writes(), "a finished host was written again")
	assert.Empty(t, recorder.Events, "a finished host got an event again")
}

func TestMachineTemplatesNeedToOptIn(t *testing.T) {
	ns := newNamespace(t)
	m3mt := fixtures.MachineTemplate(ns, "workers", "static", workers)
	delete(m3mt.Annotations, preprovv1.EnabledAnnotation)
	create(t,
		fixtures.DataTemplate(ns, "static", fixtures.StaticNetworkData()),
		m3mt,
		fixtures.Host(ns, "node-0", "52:54:00:aa:bb:01", workers),
	)

	optIn, _ := countingHostManager(t, false)
	outcome, err := optIn.Reconcile(context.Background(), getHost(t, ns, "node-0"))
	require.NoError(t, err)
	assert.Equal(t, baremetal.PhaseNoTemplate, outcome.Phase)
	assertUntouched(t, ns, "node-0", preprovv1.PausedForPreprovisioning)

	// --all-machine-templates opts every Metal3MachineTemplate in.
	all, _ := countingHostManager(t, true)
	outcome, err = all.Reconcile(context.Background(), getHost(t, ns, "node-0"))
	require.NoError(t, err)
	assert.Equal(t, baremetal.PhaseReady, outcome.Phase)
	waitForNetworkData(t, ns, "node-0")
}

// CAPM3's webhook (its stand-in here) refuses any change to a
// Metal3DataTemplate's networkData or metaData: a network change is a new
// data template, never an edit.
func TestDataTemplateNetworkDataCannotBeEdited(t *testing.T) {
	ns := newNamespace(t)
	create(t, fixtures.DataTemplate(ns, "pooled", fixtures.PoolNetworkData("provisioning")))
	dataTemplate := &capm3.Metal3DataTemplate{}
	require.NoError(t, k8sClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "pooled"}, dataTemplate))
	original := dataTemplate.DeepCopy()
	dataTemplate.Spec.NetworkData.Links.Ethernets[0].MTU = 9000
	err := k8sClient.Patch(context.Background(), dataTemplate, client.MergeFrom(original))
	require.Error(t, err, "an edit of a Metal3DataTemplate's networkData was accepted")
	assert.True(t, apierrors.IsInvalid(err), "not refused as invalid: %v", err)
	assert.Contains(t, err.Error(), "spec.NetworkData: Invalid value")
	assert.Contains(t, err.Error(), "cannot be modified")
}

// Pointing a Metal3MachineTemplate at a new Metal3DataTemplate (CAPM3
// allows editing a Metal3MachineTemplate) re-renders its hosts in place.
func TestNewDataTemplateRerendersInPlace(t *testing.T) {
	ns := newNamespace(t)
	createPooledWorkers(t, ns, "node-0")
	before := waitForNetworkData(t, ns, "node-0")
	secret := &corev1.Secret{}
	secretKey := client.ObjectKey{Namespace: ns, Name: "node-0-preprov-networkdata"}
	require.NoError(t, k8sClient.Get(context.Background(), secretKey, secret))
	claim := &ipamv1.IPClaim{}
	require.NoError(t, k8sClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "node-0-provisioning"}, claim))

	jumbo := fixtures.PoolNetworkData("provisioning")
	jumbo.Links.Ethernets[0].MTU = 9000
	create(t, fixtures.DataTemplate(ns, "pooled-jumbo", jumbo))
	pointMachineTemplateAt(t, ns, "workers", "pooled-jumbo")

	require.EventuallyWithT(t, func(c *assert.CollectT) {
		after := readNetworkData(c, ns, "node-0")
		assert.InDelta(c, 9000, after["links"].([]any)[0].(map[string]any)["mtu"], 0)
		assert.Equal(c, before["networks"], after["networks"], "the host's address changed")
	}, waitTimeout, pollInterval)
	updated := &corev1.Secret{}
	require.NoError(t, k8sClient.Get(context.Background(), secretKey, updated))
	assert.Equal(t, secret.UID, updated.UID, "the Secret was recreated instead of updated")
	sameClaim := &ipamv1.IPClaim{}
	require.NoError(t, k8sClient.Get(context.Background(), client.ObjectKeyFromObject(claim), sameClaim))
	assert.Equal(t, claim.UID, sameClaim.UID, "the claim was recreated")
	waitForEvent(t, ns, "node-0", baremetal.ReasonSecretUpdated)
}

// pointMachineTemplateAt names another Metal3DataTemplate in a
// Metal3MachineTemplate.
func pointMachineTemplateAt(t *testing.T, ns, machineTemplate, dataTemplate string) {
	t.Helper()
	m3mt := &capm3.Metal3MachineTemplate{}
	require.NoError(t, k8sClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: machineTemplate}, m3mt))
	original := m3mt.DeepCopy()
	m3mt.Spec.Template.Spec.DataTemplate.Name = dataTemplate
	require.NoError(t, k8sClient.Patch(context.Background(), m3mt, client.MergeFrom(original)))
}

// countingHostManager is a host manager like the controller's, on a client
// that counts its writes and a recorder that keeps its events.
func countingHostManager(t *testing.T, allMachineTemplates bool) (*baremetal.HostManager, interface{ Writes() []string }) {
	t.Helper()
	c, writes, err := testEnv.NewCountingClient()
	require.NoError(t, err)
	return &baremetal.HostManager{
		Client:    c,
		Templates: &baremetal.Templates{Reader: c, AllMachineTemplates: allMachineTemplates},
		Claims:    &ipam.Claims{Client: c},
		Recorder:  events.NewFakeRecorder(100),
	}, writes
}

// fixDataTemplate fixes the network data the way CAPM3 allows: a new
// Metal3DataTemplate, named by the Metal3MachineTemplate.
func fixDataTemplate(networkData *capm3.NetworkData) func(t *testing.T, ns string) {
	return func(t *testing.T, ns string) {
		t.Helper()
		create(t, fixtures.DataTemplate(ns, "data-fixed", networkData))
		pointMachineTemplateAt(t, ns, "workers", "data-fixed")
	}
}

func withNetworkLink(networkData *capm3.NetworkData, link string) *capm3.NetworkData {
	networkData.Networks.IPv4[0].Link = link
	return networkData
}

func withMAC(networkData *capm3.NetworkData, mac *capm3.NetworkLinkEthernetMac) *capm3.NetworkData {
	networkData.Links.Ethernets[0].MACAddress = mac
	return networkData
}

func keys(m map[string]string) []string {
	result := make([]string, 0, len(m))
	for key := range m {
		result = append(result, key)
	}
	return result
}
