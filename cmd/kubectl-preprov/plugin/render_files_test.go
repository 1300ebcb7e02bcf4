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

package plugin

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// run runs kubectl preprov with args, without a kubeconfig, and returns
// what it printed.
func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "none"))
	var out, errOut bytes.Buffer
	command := NewCommand(&out, &errOut)
	command.SetArgs(args)
	err := command.Execute()
	return out.String(), err
}

// writeFiles writes documents into files of a temporary folder and returns
// their -f arguments.
func writeFiles(t *testing.T, documents ...string) []string {
	t.Helper()
	dir := t.TempDir()
	var args []string
	for i, document := range documents {
		path := filepath.Join(dir, string(rune('a'+i))+".yaml")
		require.NoError(t, os.WriteFile(path, []byte(document), 0o600))
		args = append(args, "-f", path)
	}
	return args
}

const (
	pool = `apiVersion: ipam.metal3.io/v1alpha1
kind: IPPool
metadata:
  name: provisioning
spec:
  pools:
    - start: 192.0.2.10
      end: 192.0.2.20
      gateway: 192.0.2.254
  prefix: 24
  gateway: 192.0.2.1
  dnsServers: [192.0.2.53]
`
	host = `apiVersion: metal3.io/v1alpha1
kind: BareMetalHost
metadata:
  name: node-0
  labels: {rack: r1}
  annotations: {baremetalhost.metal3.io/paused: metal3.io/preprovisioning}
spec:
  bootMACAddress: "52:54:00:aa:bb:01"
`
	// templateYAML has no mtu: the CRD's default is 1500.
	templateYAML = `apiVersion: infrastructure.cluster.x-k8s.io/v1beta1
kind: Metal3PreprovisioningTemplate
metadata:
  name: rack-r1
spec:
  hostSelector: {matchLabels: {rack: r1}}
  networkData:
    links:
      ethernets:
        - {type: phy, id: eth0, macAddress: {fromHostInterface: eth0}}
    networks:
      ipv4:
        - id: provisioning
          link: eth0
          ipAddressFromIPPool: provisioning
          routes:
            - {network: 0.0.0.0, prefix: 0, gateway: {fromIPPool: provisioning}, services: {dnsFromIPPool: provisioning}}
`
)

// clusterAPITemplateYAML takes the address and gateway from a Cluster API
// IPAM pool, whose file kubectl preprov does not need.
const clusterAPITemplateYAML = `apiVersion: infrastructure.cluster.x-k8s.io/v1beta1
kind: Metal3PreprovisioningTemplate
metadata:
  name: rack-r1
spec:
  hostSelector: {matchLabels: {rack: r1}}
  networkData:
    links:
      ethernets:
        - {type: phy, id: eth0, macAddress: {fromHostInterface: eth0}}
    networks:
      ipv4:
        - id: provisioning
          link: eth0
          fromPoolRef: {name: rack1, apiGroup: ipam.cluster.x-k8s.io, kind: InClusterIPPool}
          routes:
            - {network: 0.0.0.0, prefix: 0, gateway: {fromPoolRef: {name: rack1, apiGroup: ipam.cluster.x-k8s.io, kind: InClusterIPPool}}}
`

func TestRenderFromFilesClusterAPIPool(t *testing.T) {
	args := append([]string{"render", "--address", "rack1=10.0.0.5/24,10.0.0.1"}, writeFiles(t, clusterAPITemplateYAML, host)...)
	out, err := run(t, args...)
	require.NoError(t, err)
	for _, line := range []string{
		"IPAddressClaim node-0-rack1 on InClusterIPPool rack1: 10.0.0.5/24, gateway 10.0.0.1\n",
		`"ip_address": "10.0.0.5"`,
		`"netmask": "255.255.255.0"`,
		`"gateway": "10.0.0.1"`,
	} {
		assert.Contains(t, out, line)
	}
	assert.NotContains(t, out, `"type": "dns"`, "a Cluster API IPAM pool gives no DNS servers")
}

func TestRenderFromFiles(t *testing.T) {
	args := append([]string{"render", "-o", "networkdata", "--address", "provisioning=192.0.2.15"}, writeFiles(t, templateYAML, host, pool)...)
	out, err := run(t, args...)
	require.NoError(t, err)

	var document struct {
		Links    []map[string]any `json:"links"`
		Networks []struct {
			IPAddress string           `json:"ip_address"`
			Netmask   string           `json:"netmask"`
			Routes    []map[string]any `json:"routes"`
		} `json:"networks"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &document), out)
	require.Len(t, document.Links, 1, out)
	require.Len(t, document.Networks, 1, out)
	link, network := document.Links[0], document.Networks[0]
	assert.Equal(t, "52:54:00:aa:bb:01", link["ethernet_mac_address"], "the boot MAC stands in for the host interface")
	assert.EqualValues(t, 1500, link["mtu"], "the CRD's default, as the API server applies it")
	assert.Equal(t, "192.0.2.15", network.IPAddress)
	assert.Equal(t, "255.255.255.0", network.Netmask, "the prefix of the pool")
	require.Len(t, network.Routes, 1, out)
	assert.Equal(t, "192.0.2.254", network.Routes[0]["gateway"], "the gateway of the pool entry that holds the address, before the pool's")
	assert.Equal(t, []any{map[string]any{"type": "dns", "address": "192.0.2.53"}}, network.Routes[0]["services"])

	summary, err := run(t, append([]string{"render", "--address", "provisioning=192.0.2.15"}, writeFiles(t, templateYAML, host, pool)...)...)
	require.NoError(t, err)
	for _, line := range []string{
		"BareMetalHost:  default/node-0",
		"Template:       Metal3PreprovisioningTemplate/rack-r1",
		"IPClaim node-0-provisioning on IPPool provisioning: 192.0.2.15/24, gateway 192.0.2.254, DNS 192.0.2.53",
		`"ip_address": "192.0.2.15"`,
	} {
		assert.Contains(t, summary, line)
	}
}

// TestRenderFromFilesFails covers bad files and what the controller would
// refuse: each error says what is wrong and how to fix it.
func TestRenderFromFilesFails(t *testing.T) {
	secondHost := strings.ReplaceAll(strings.ReplaceAll(host, "node-0", "node-1"), "aa:bb:01", "aa:bb:02")
	twoInterfaces := strings.Replace(templateYAML, "        - {type: phy, id: eth0, macAddress: {fromHostInterface: eth0}}",
		"        - {type: phy, id: eth0, macAddress: {fromHostInterface: eth0}}\n        - {type: phy, id: eth1, macAddress: {fromHostInterface: eth1}}", 1)
	tests := []struct {
		name      string
		documents []string
		args      []string
		// want are parts of the error.
		want []string
	}{{
		name:      "an unknown field",
		documents: []string{strings.Replace(templateYAML, "hostSelector:", "hostSelectr:", 1), host, pool},
		want:      []string{"document 1", "Metal3PreprovisioningTemplate", `unknown field "spec.hostSelectr"`},
	}, {
		name: "a CAPM3 version the controller does not read",
		documents: []string{`apiVersion: infrastructure.cluster.x-k8s.io/v1beta1
kind: Metal3DataTemplate
metadata: {name: old}
`, host},
		want: []string{"Metal3DataTemplate infrastructure.cluster.x-k8s.io/v1beta1: write it as infrastructure.cluster.x-k8s.io/v1beta2"},
	}, {
		name:      "not YAML",
		documents: []string{"kind: [", host},
		want:      []string{"a.yaml"},
	}, {
		name:      "no kind",
		documents: []string{"metadata: {name: x}\n", host},
		want:      []string{"apiVersion and kind are required"},
	}, {
		name:      "a template the webhook refuses, with the webhook's message",
		documents: []string{strings.Replace(templateYAML, "{matchLabels: {rack: r1}}", "{}", 1), host, pool},
		want: []string{`Metal3PreprovisioningTemplate.infrastructure.cluster.x-k8s.io "rack-r1" is invalid: spec.hostSelector: Required value: ` +
			"an empty selector selects every BareMetalHost of the namespace"},
	}, {
		name:      "no host",
		documents: []string{templateYAML, pool},
		want:      []string{"the files hold no BareMetalHost: give the host's file with -f"},
	}, {
		name:      "two hosts and no name",
		documents: []string{templateYAML, host, secondHost, pool},
		want:      []string{"the files hold 2 BareMetalHosts (node-0, node-1): name the one to render"},
	}, {
		name:      "an address without its pool",
		documents: []string{templateYAML, host},
		args:      []string{"--address", "provisioning=192.0.2.15"},
		want:      []string{`IPPool "provisioning" is not in namespace "default": give its file with -f`},
	}, {
		name:      "an address outside the pool",
		documents: []string{templateYAML, host, pool},
		args:      []string{"--address", "provisioning=192.0.2.99"},
		want:      []string{`--address provisioning=192.0.2.99: the address is in none of IPPool "provisioning"'s spec.pools`},
	}, {
		name:      "a malformed address",
		documents: []string{templateYAML, host, pool},
		args:      []string{"--address", "provisioning:192.0.2.15"},
		want:      []string{`--address "provisioning:192.0.2.15": write it as <pool name>=<IP address>`},
	}, {
		name:      "a prefix for a Metal3 IPPool, which has its own",
		documents: []string{templateYAML, host, pool},
		args:      []string{"--address", "provisioning=192.0.2.15/24"},
		want:      []string{`the prefix and gateway of an address of IPPool "provisioning" are the pool's; give the IP alone, provisioning=192.0.2.15`},
	}, {
		name:      "no prefix for a Cluster API IPAM pool",
		documents: []string{clusterAPITemplateYAML, host},
		args:      []string{"--address", "rack1=10.0.0.5"},
		want:      []string{`the prefix of an address of InClusterIPPool "rack1" is its provider's`, "rack1=10.0.0.5/<prefix>[,<gateway>]"},
	}, {
		name:      "no address for a Cluster API IPAM pool",
		documents: []string{clusterAPITemplateYAML, host},
		want:      []string{`no address given for InClusterIPPool "rack1": pass --address rack1=<IP>/<prefix>[,<gateway>]`},
	}, {
		name:      "no address",
		documents: []string{templateYAML, host, pool},
		want:      []string{`no address given for IPPool "provisioning": pass --address provisioning=<IP>`},
	}, {
		name:      "no template selects the host",
		documents: []string{strings.Replace(templateYAML, "rack: r1}}", "rack: r2}}", 1), host, pool},
		want:      []string{"no network data for default/node-0: no template selects this host"},
	}, {
		name:      "two templates select the host",
		documents: []string{templateYAML, strings.Replace(templateYAML, "name: rack-r1", "name: rack-r1-again", 1), host, pool},
		args:      []string{"--address", "provisioning=192.0.2.15"},
		want: []string{"selected by 2 templates (Metal3PreprovisioningTemplate/rack-r1, Metal3PreprovisioningTemplate/rack-r1-again): " +
			"the controller leaves the host untouched"},
	}, {
		name: "a missing Metal3DataTemplate, with the controller's message",
		documents: []string{`apiVersion: infrastructure.cluster.x-k8s.io/v1beta1
kind: Metal3PreprovisioningTemplate
metadata:
  name: by-ref
spec:
  hostSelector: {matchLabels: {rack: r1}}
  dataTemplateRef: {name: missing}
`, host},
		want: []string{`Metal3PreprovisioningTemplate/by-ref names Metal3DataTemplate "missing", which does not exist in namespace "default": ` +
			"create it or fix the name"},
	}, {
		name:      "no MAC before inspection, with the controller's message",
		documents: []string{twoInterfaces, host, pool},
		args:      []string{"--address", "provisioning=192.0.2.15"},
		want:      []string{"Metal3PreprovisioningTemplate/rack-r1: ", "fromHostInterface", "use macAddress.string or macAddress.fromAnnotation"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append(append([]string{"render"}, tt.args...), writeFiles(t, tt.documents...)...)
			_, err := run(t, args...)
			require.Error(t, err)
			for _, want := range tt.want {
				assert.Contains(t, err.Error(), want)
			}
		})
	}
}
