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

package networkdata

import (
	"bytes"
	"encoding/json"
	"testing"

	capm3 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// FuzzRender feeds arbitrary templates, bond parameters, hosts and
// addresses. Whatever comes in, Render must not panic and must return either
// a one-line error or a document that Ironic's network_data schema accepts
// (Ironic's API refuses the node otherwise); a compiled template renders
// with an address for every pool it names, the same bytes as Render.
func FuzzRender(f *testing.F) {
	f.Add(realisticTemplate, `{"bond0": {"miimon": 100, "lacp_rate": "fast"}}`,
		`{"Annotations": {"mac.example.com/eth1": "52:54:00:00:00:02"}, "BootMACAddress": "52:54:00:00:00:01"}`,
		`{"prov-v4": {"IP": "192.168.0.10", "Prefix": 24, "Gateway": "192.168.0.1", "DNSServers": ["192.168.0.53"]},
		"storage-v4": {"IP": "172.16.0.10", "Prefix": 24},
		"prov-v6": {"IP": "2001:db8::10", "Prefix": 64, "Gateway": "2001:db8::1", "DNSServers": ["2001:db8::53"]}}`)
	f.Add(`null`, `null`, `{}`, `{}`)
	f.Add(`{}`, `{"bond0": {"mode": 1}}`, `{"NICs": [{"Name": "eno1", "MAC": "52:54:00:00:00:09"}]}`, `null`)
	f.Add(`{"links": {"ethernets": [{"type": "phy", "id": "eth0", "mtu": 1500, "macAddress": {"fromHostInterface": "eno1"}}],
		"bonds": [{"id": "b", "bondMode": "802.3ad", "mtu": 9000, "bondLinks": ["eth0"], "macAddress": {"string": "52:54:00:00:00:09"},
			"parameters": [{"name": "miimon", "value": 100}, {"name": "mode"}]}]}}`,
		`{"b": {"lacp_rate": "fast", "updelay": -1}}`, `{"NICs": [{"Name": "eno1", "MAC": "52:54:00:00:00:09"}]}`, `{}`)
	f.Add(`{"links": {"vlans": [{"id": "v", "vlanLink": "v", "macAddress": {"fromAnnotation": {"object": "machine", "annotation": "a"}}}]},
		"networks": {"ipv6": [{"id": "n", "link": "v", "fromPoolRef": {"name": "p", "apiGroup": "ipam.cluster.x-k8s.io"}}]}}`, `{}`, `{}`, `{}`)
	f.Add(`{"networks": {"ipv4": [{"id": "n", "link": "e", "fromPoolAnnotation": {"object": "baremetalhost", "annotation": "p"},
			"routes": [{"network": "10.0.0.0", "prefix": 32, "gateway": {"fromIPPool": "pool"}}]}],
		"ipv4DHCP": [{"id": "d", "link": "e", "routes": [{"network": "0.0.0.0", "gateway": {"fromPoolAnnotation": {"object": "baremetalhost", "annotation": "p"}}}]}]},
		"links": {"ethernets": [{"type": "phy", "id": "e", "mtu": 1280, "macAddress": {"string": "52:54:00:00:00:01"}}]}, "services": {"dnsFromIPPool": "d"}}`,
		`{}`, `{"Annotations": {"p": "pool"}}`, `{"pool": {"IP": "10.0.0.1", "Prefix": 32, "Gateway": "::1"}, "d": {"DNSServers": ["::ffff:1.2.3.4"]}}`)
	f.Add(`{"links": {"ethernets": [{"type": "phy", "id": "e", "mtu": 1500, "macAddress": {"string": "52:54:00:00:00:01"}}]},
		"networks": {"ipv6SLAAC": [{"id": "s", "link": "e", "routes": [{"network": "::", "gateway": {"string": "fe80::1"}, "services": {"dns": ["2001:db8::53"]}}]}]}}`,
		`{}`, `{}`, `{}`)

	f.Fuzz(func(t *testing.T, ndJSON, bondParamsJSON, hostJSON, addressesJSON string) {
		var nd *capm3.NetworkData
		var bondParams map[string]map[string]intstr.IntOrString
		var host Host
		var addresses map[string]Address
		if json.Unmarshal([]byte(ndJSON), &nd) != nil || json.Unmarshal([]byte(bondParamsJSON), &bondParams) != nil ||
			json.Unmarshal([]byte(hostJSON), &host) != nil || json.Unmarshal([]byte(addressesJSON), &addresses) != nil {
			t.Skip("not a template, bond parameters, host or address set")
		}
		opts := []Option{WithBondParameters(bondParams)}

		plan, err := Compile(nd, host, opts...)
		if err != nil {
			requireOneLineError(t, err)
			return
		}
		// Give every pool an address, as the caller does before Render.
		if addresses == nil {
			addresses = map[string]Address{}
		}
		for _, name := range plan.Pools() {
			if _, ok := addresses[name]; !ok {
				addresses[name] = Address{IP: "192.0.2.1", Prefix: 24, Gateway: "192.0.2.254"}
			}
		}

		out, err := plan.Render(addresses)
		if err != nil {
			requireOneLineError(t, err)
			assert.NotErrorIs(t, err, ErrMissingAddress, "every pool Pools named had an address")
			return
		}

		var doc map[string]any
		require.NoError(t, json.Unmarshal(out, &doc), "invalid JSON: %s", out)
		for _, key := range []string{"links", "networks", "services"} {
			require.IsType(t, []any{}, doc[key], "%s must be a list in %s", key, out)
		}
		requireValidForIronic(t, out)
		again, err := Render(nd, host, addresses, opts...)
		require.NoError(t, err)
		require.True(t, bytes.Equal(out, again), "output is not deterministic")
	})
}

func requireOneLineError(t *testing.T, err error) {
	t.Helper()
	require.NotEmpty(t, err.Error())
	require.NotContains(t, err.Error(), "\n")
}
