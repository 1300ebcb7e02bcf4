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
	"maps"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	capipamv1 "sigs.k8s.io/cluster-api/api/ipam/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/baremetal"
	"github.com/capm3-preprov/capm3-preprov/template"
	"github.com/capm3-preprov/capm3-preprov/test/consumers/cloudinit"
	"github.com/capm3-preprov/capm3-preprov/test/consumers/ironic"
	"github.com/capm3-preprov/capm3-preprov/test/framework"
)

// examplesDir holds the examples `make run` applies, one folder each.
var examplesDir = filepath.Join(framework.RepoRoot(), "examples")

// exampleExpectation is what one example folder shows.
type exampleExpectation struct {
	// templateOf names, for every host the example pauses for
	// preprovisioning, the template ("<Kind>/<name>") that must serve it.
	templateOf map[string]string
	// check asserts the essentials of the hosts' network data, by host name.
	check func(t *testing.T, ns string, networkData map[string]map[string]any)
}

// exampleExpectations are keyed by folder. A folder without an entry still
// gets the checks every example must pass (waitForExample).
var exampleExpectations = map[string]exampleExpectation{
	"machine-template-ipam": {
		templateOf: map[string]string{
			"worker-0": "Metal3MachineTemplate/workers",
			"worker-1": "Metal3MachineTemplate/workers",
		},
		check: func(t *testing.T, ns string, networkData map[string]map[string]any) {
			t.Helper()
			for _, host := range []string{"worker-0", "worker-1"} {
				link := linksByID(t, networkData[host])["enp1s0"]
				assert.Equal(t, getHost(t, ns, host).Spec.BootMACAddress, link["ethernet_mac_address"],
					"%s: before inspection the boot MAC stands in for enp1s0", host)
				network := networksByID(t, networkData[host])["baremetal"]
				assertInPrefix(t, "192.168.111.0/24", network["ip_address"])
				assert.Equal(t, "255.255.255.0", network["netmask"])
			}
		},
	},
	"preprovisioning-template": {
		templateOf: map[string]string{
			"rack-a1-0": "Metal3PreprovisioningTemplate/rack-a1",
			"rack-a1-1": "Metal3PreprovisioningTemplate/rack-a1",
			"rack-b1-0": "Metal3PreprovisioningTemplate/rack-b",
			"rack-b2-0": "Metal3PreprovisioningTemplate/rack-b",
		},
		check: func(t *testing.T, _ string, networkData map[string]map[string]any) {
			t.Helper()
			// Inline networkData and the Metal3DataTemplate behind
			// dataTemplateRef each use their own pool.
			subnets := map[string]string{
				"rack-a1-0": "192.168.112.0/24", "rack-a1-1": "192.168.112.0/24",
				"rack-b1-0": "192.168.113.0/24", "rack-b2-0": "192.168.113.0/24",
			}
			for host, subnet := range subnets {
				network := networksByID(t, networkData[host])["provisioning"]
				assertInPrefix(t, subnet, network["ip_address"])
				assert.Equal(t, "255.255.255.0", network["netmask"], host)
			}
		},
	},
	"bond-vlan": {
		templateOf: map[string]string{"bonded-0": "Metal3PreprovisioningTemplate/bond-vlan"},
		check: func(t *testing.T, _ string, networkData map[string]map[string]any) {
			t.Helper()
			links := linksByID(t, networkData["bonded-0"])
			assert.Equal(t, "00:5c:52:31:3c:01", links["eno1"]["ethernet_mac_address"], "eno1's MAC is a string")
			assert.Equal(t, "00:5c:52:31:3c:02", links["eno2"]["ethernet_mac_address"], "eno2's MAC comes from the host's annotation")

			bond := links["bond0"]
			assert.Equal(t, "bond", bond["type"])
			assert.Equal(t, "802.3ad", bond["bond_mode"])
			assert.Equal(t, "layer3+4", bond["bond_xmit_hash_policy"])
			assert.Equal(t, []any{"eno1", "eno2"}, bond["bond_links"])
			// Scalars, the keys glean and cloud-init apply (bondParameters);
			// the bond's own parameters only name them.
			assert.InDelta(t, 100, bond["bond_miimon"], 0)
			assert.Equal(t, "fast", bond["bond_lacp_rate"])
			assert.NotContains(t, bond, "bond_options")

			vlan := links["vlan100"]
			assert.Equal(t, "vlan", vlan["type"])
			assert.Equal(t, "bond0", vlan["vlan_link"])
			assert.EqualValues(t, 100, vlan["vlan_id"])

			network := networksByID(t, networkData["bonded-0"])["provisioning"]
			assert.Equal(t, "vlan100", network["link"], "the address lives on the VLAN")
			assertInPrefix(t, "192.168.114.0/24", network["ip_address"])
			assert.ElementsMatch(t, []any{
				map[string]any{"network": "0.0.0.0", "netmask": "0.0.0.0", "gateway": "192.168.114.1",
					"services": []any{map[string]any{"type": "dns", "address": "192.168.114.1"}}},
				map[string]any{"network": "10.20.0.0", "netmask": "255.255.0.0", "gateway": "192.168.114.254",
					"services": []any{}},
			}, network["routes"])
			assert.Equal(t, []any{map[string]any{"type": "dns", "address": "192.168.114.53"}}, networkData["bonded-0"]["services"])
		},
	},
	"cluster-api-ipam": {
		templateOf: map[string]string{
			"capi-ipam-0": "Metal3PreprovisioningTemplate/cluster-api-ipam",
			"capi-ipam-1": "Metal3PreprovisioningTemplate/cluster-api-ipam",
		},
		check: func(t *testing.T, ns string, networkData map[string]map[string]any) {
			t.Helper()
			for _, host := range []string{"capi-ipam-0", "capi-ipam-1"} {
				network := networksByID(t, networkData[host])["provisioning"]
				assertInPrefix(t, "192.168.116.0/24", network["ip_address"])
				assert.Equal(t, "255.255.255.0", network["netmask"], host)
				assert.Equal(t, []any{map[string]any{"network": "0.0.0.0", "netmask": "0.0.0.0", "gateway": "192.168.116.1",
					"services": []any{map[string]any{"type": "dns", "address": "192.168.116.1"}}}}, network["routes"], host)
				claim := &capipamv1.IPAddressClaim{}
				require.NoError(t, k8sClient.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: host + "-cluster-api-provisioning"}, claim))
				address := &capipamv1.IPAddress{}
				require.NoError(t, k8sClient.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: claim.Status.AddressRef.Name}, address))
				assert.Equal(t, address.Spec.Address, network["ip_address"], "%s has the address of its IPAddressClaim", host)
			}
		},
	},
	"ipv6": {
		templateOf: map[string]string{
			"ipv6-0":       "Metal3PreprovisioningTemplate/ipv6-only",
			"ipv6-1":       "Metal3PreprovisioningTemplate/ipv6-only",
			"dual-stack-0": "Metal3PreprovisioningTemplate/dual-stack",
		},
		check: func(t *testing.T, _ string, networkData map[string]map[string]any) {
			t.Helper()
			defaultRoute := map[string]any{"network": "::", "netmask": "::", "gateway": "2001:db8::1",
				"services": []any{map[string]any{"type": "dns", "address": "2001:db8::53"}}}
			for _, host := range []string{"ipv6-0", "ipv6-1", "dual-stack-0"} {
				network := networksByID(t, networkData[host])["provisioning-v6"]
				assert.Equal(t, "ipv6", network["type"], host)
				assertInPrefix(t, "2001:db8::/64", network["ip_address"])
				assert.Equal(t, "ffff:ffff:ffff:ffff::", network["netmask"], host)
				routes, _ := network["routes"].([]any)
				require.Len(t, routes, 1, host)
				if host == "dual-stack-0" {
					// Its DNS server is a top-level service instead.
					assert.Equal(t, "2001:db8::1", routes[0].(map[string]any)["gateway"])
					continue
				}
				assert.Equal(t, defaultRoute, routes[0], host)
			}

			v4 := networksByID(t, networkData["dual-stack-0"])["provisioning-v4"]
			assert.Equal(t, "ipv4", v4["type"])
			assertInPrefix(t, "192.168.115.0/24", v4["ip_address"])
			assert.Equal(t, []any{map[string]any{"type": "dns", "address": "2001:db8::53"}}, networkData["dual-stack-0"]["services"])
		},
	},
}

// TestExamples applies each example folder into a namespace of its own and
// checks that it does what it shows, and that its hosts' Secrets are taken
// by Ironic's API as BMO hands them over and read as intended by
// cloud-init. A new folder is picked up without touching this file; its
// exampleExpectations entry adds the specifics.
func TestExamples(t *testing.T) {
	t.Parallel()
	folders := exampleFolders(t)
	for folder := range exampleExpectations {
		require.Contains(t, folders, folder, "exampleExpectations names a folder that is not in examples/")
	}
	consumers := startConsumers(t)
	for _, folder := range folders {
		t.Run(folder, func(t *testing.T) {
			t.Parallel()
			ns := newNamespace(t)
			example := applyExample(t, ns, folder)
			networkData := waitForExample(t, ns, example)
			consumers.check(t, ns, folder, slices.Sorted(maps.Keys(networkData)))

			expected := exampleExpectations[folder]
			if expected.templateOf != nil {
				assert.ElementsMatch(t, slices.Collect(maps.Keys(expected.templateOf)), slices.Collect(maps.Keys(networkData)),
					"the hosts paused for preprovisioning")
				for host, template := range expected.templateOf {
					assert.Equal(t, template, getHost(t, ns, host).Annotations[preprovv1.TemplateAnnotation], host)
				}
			}
			if expected.check != nil {
				expected.check(t, ns, networkData)
			}
		})
	}
}

// TestAllExamplesInOneNamespace applies every example into one namespace, as
// `make run` does: names, host selectors, pools and address ranges must not
// collide, so every host is served by its own example's template, without a
// conflict, and no address is handed out twice.
func TestAllExamplesInOneNamespace(t *testing.T) {
	ns := newNamespace(t)
	var examples []appliedExample
	for _, folder := range exampleFolders(t) {
		// Create fails on a name another example already used.
		examples = append(examples, applyExample(t, ns, folder))
	}
	// A host left paused says why in its Warning events (a conflict names
	// both templates).
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		for _, example := range examples {
			for host := range example.hosts {
				for _, event := range hostEvents(t, ns, host) {
					if event.Type == corev1.EventTypeWarning {
						t.Logf("%s/%s: %s: %s", example.folder, host, event.Reason, event.Note)
					}
				}
			}
		}
	})

	addresses := map[string]string{}
	for _, example := range examples {
		networkData := waitForExample(t, ns, example)
		for host, data := range networkData {
			waitForEvent(t, ns, host, baremetal.ReasonNetworkDataSet)
			for _, event := range hostEvents(t, ns, host) {
				assert.NotEqual(t, baremetal.ReasonTemplateConflict, event.Reason, "%s: %s", host, event.Note)
			}
			template, _ := template.ParseRef(getHost(t, ns, host).Annotations[preprovv1.TemplateAnnotation])
			assert.Contains(t, example.templates, template, "%s is served by a template of another example", host)
			for _, network := range networksByID(t, data) {
				ip, ok := network["ip_address"].(string)
				if !ok {
					continue
				}
				assert.NotContains(t, addresses, ip, "%s got %s, already given to %s", host, ip, addresses[ip])
				addresses[ip] = host
			}
		}
	}
}

// appliedExample is an example folder as created in a test namespace.
type appliedExample struct {
	folder string
	// hosts maps each BareMetalHost to the value of its pause annotation.
	hosts map[string]string
	// templates are the example's template sources.
	templates []template.Ref
}

func exampleFolders(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir(examplesDir)
	require.NoError(t, err)
	var folders []string
	for _, entry := range entries {
		if entry.IsDir() {
			folders = append(folders, entry.Name())
		}
	}
	require.NotEmpty(t, folders)
	return folders
}

func applyExample(t *testing.T, ns, folder string) appliedExample {
	t.Helper()
	objects, err := framework.ApplyFilesInNamespace(context.Background(), k8sClient, ns, filepath.Join(examplesDir, folder))
	require.NoError(t, err)
	example := appliedExample{folder: folder, hosts: map[string]string{}}
	for _, obj := range objects {
		switch obj.GetKind() {
		case "BareMetalHost":
			example.hosts[obj.GetName()] = obj.GetAnnotations()[preprovv1.PausedAnnotation]
		case preprovv1.KindPreprovisioningTemplate:
			example.templates = append(example.templates, templateRef(obj))
		case preprovv1.KindMachineTemplate:
			if obj.GetAnnotations()[preprovv1.EnabledAnnotation] == "true" {
				example.templates = append(example.templates, templateRef(obj))
			}
		}
	}
	return example
}

func templateRef(obj *unstructured.Unstructured) template.Ref {
	return template.Ref{Kind: obj.GetKind(), Name: obj.GetName()}
}

// waitForExample waits until every host the example pauses for
// preprovisioning has its network data and every Metal3PreprovisioningTemplate
// of the example is Ready with all its hosts, then checks that hosts paused by
// someone else were left alone. It returns the network data by host.
func waitForExample(t *testing.T, ns string, example appliedExample) map[string]map[string]any {
	t.Helper()
	networkData := map[string]map[string]any{}
	for host, paused := range example.hosts {
		if paused == preprovv1.PausedForPreprovisioning {
			networkData[host] = waitForNetworkData(t, ns, host)
		}
	}
	require.NotEmpty(t, networkData, "%s pauses no host for preprovisioning", example.folder)

	for _, template := range example.templates {
		if template.Kind != preprovv1.KindPreprovisioningTemplate {
			continue
		}
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			current := getTemplate(c, ns, template.Name)
			status, ready := current.Status, templateReady(c, current)
			// Reason Ready also means the status controller found no problem
			// in the network data, the checks our webhook makes.
			assert.Equal(c, metav1.ConditionTrue, ready.Status, "%s: %s", template, ready.Message)
			assert.Equal(c, preprovv1.ReadyReason, ready.Reason, "%s: %s", template, ready.Message)
			assert.Positive(c, ptr.Deref(status.MatchedHosts, 0), template)
			assert.Equal(c, status.MatchedHosts, status.ReadyHosts, template)
		}, waitTimeout, pollInterval)
	}

	for host, paused := range example.hosts {
		if paused != preprovv1.PausedForPreprovisioning {
			assertUntouched(t, ns, host, paused)
		}
	}
	return networkData
}

// linksByID indexes the links of network data by id.
func linksByID(t *testing.T, networkData map[string]any) map[string]map[string]any {
	t.Helper()
	return byID(t, networkData, "links")
}

// networksByID indexes the networks of network data by id.
func networksByID(t *testing.T, networkData map[string]any) map[string]map[string]any {
	t.Helper()
	return byID(t, networkData, "networks")
}

func byID(t *testing.T, networkData map[string]any, list string) map[string]map[string]any {
	t.Helper()
	items, ok := networkData[list].([]any)
	require.True(t, ok, "network data has no %s list", list)
	indexed := map[string]map[string]any{}
	for _, item := range items {
		entry, ok := item.(map[string]any)
		require.True(t, ok, "%s holds %v", list, item)
		id, _ := entry["id"].(string)
		indexed[id] = entry
	}
	return indexed
}

func assertInPrefix(t *testing.T, prefix string, ip any) {
	t.Helper()
	text, _ := ip.(string)
	address, err := netip.ParseAddr(text)
	if assert.NoError(t, err, "ip_address %v", ip) {
		assert.True(t, netip.MustParsePrefix(prefix).Contains(address), "%s is not in %s", address, prefix)
	}
}

// exampleConsumers are the readers of the examples' Secrets: one Ironic 29
// from the Debian 13 root (ironic.Start) for TestExamples, started while
// the examples are applied (it takes half a minute or more to answer), and
// cloud-init.
type exampleConsumers struct {
	// dir holds Ironic's log and cloud-init's output; it is kept when a
	// test fails.
	dir    string
	server func() (*ironic.Server, error)
}

func startConsumers(t *testing.T) *exampleConsumers {
	t.Helper()
	//nolint:usetesting // kept after a failure, with Ironic's log, where t.TempDir would remove it
	dir, err := os.MkdirTemp("", "capm3-preprov-examples-")
	require.NoError(t, err)
	type result struct {
		server *ironic.Server
		err    error
	}
	started := make(chan result, 1)
	begin := time.Now()
	go func() {
		server, err := ironic.Start(context.Background(), ironic.Options{LogPath: filepath.Join(dir, "ironic.log")})
		started <- result{server, err}
	}()
	consumers := &exampleConsumers{dir: dir, server: sync.OnceValues(func() (*ironic.Server, error) {
		started := <-started
		t.Logf("Ironic's API answered %s after the test began", time.Since(begin).Round(time.Millisecond))
		return started.server, started.err
	})}
	t.Cleanup(func() {
		if server, err := consumers.server(); err == nil {
			assert.NoError(t, server.Stop())
		}
		if t.Failed() {
			t.Logf("Ironic's log and cloud-init's output are kept in %s", dir)
			return
		}
		assert.NoError(t, os.RemoveAll(dir))
	})
	return consumers
}

// check hands each host's Secret to Ironic as BMO does, which must store
// it, checks on the first host that broken variants of it are refused (so
// the check can fail), and checks what cloud-init makes of each.
func (c *exampleConsumers) check(t *testing.T, ns, folder string, hosts []string) {
	t.Helper()
	ctx := context.Background()
	server, err := c.server()
	require.NoError(t, err, "starting Ironic's API")
	for i, host := range hosts {
		secret := &corev1.Secret{}
		require.NoError(t, k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: baremetal.NetworkDataSecretName(host)}, secret))
		document := secret.Data[preprovv1.NetworkDataKey]

		start := time.Now()
		accepted, err := server.Accept(ctx, ns, host, document)
		//nolint:testifylint // every host's refusal is reported, and cloud-init still checks it
		if assert.NoError(t, err, "Ironic's API must take the network data of %s as BMO hands it over", host) {
			t.Logf("%s: Ironic took the network data in %s", host, time.Since(start).Round(time.Millisecond))
			if i == 0 {
				assert.NoError(t, server.RefusesBroken(ctx, accepted))
			}
		}

		start = time.Now()
		//nolint:testifylint // every host's problem is reported, not only the first host's
		assert.NoError(t, cloudinit.Check(ctx, document, filepath.Join(c.dir, "cloud-init", folder, host)))
		t.Logf("%s: cloud-init's net-convert and the check took %s", host, time.Since(start).Round(time.Millisecond))
	}
}
