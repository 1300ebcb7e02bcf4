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
	"encoding/json"
	"testing"

	capm3 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// wantErr is one expected InputError: its field and parts of its message.
type wantErr struct {
	field    string
	contains []string
}

func TestValidateTemplate(t *testing.T) {
	net4 := func(extra string) string {
		return `{"links": {"ethernets": [` + eth0 + `]}, "networks": {"ipv4": [{"id": "n", "link": "eth0", ` + extra + `}]}}`
	}
	route4 := func(route string) string {
		return net4(`"ipAddressFromIPPool": "v4", "routes": [` + route + `]`)
	}
	route6 := func(route string) string {
		return `{"links": {"ethernets": [` + eth0 + `]}, "networks": {"ipv6DHCP": [{"id": "n", "link": "eth0", "routes": [` + route + `]}]}}`
	}
	const gw4, gw6 = `"gateway": {"string": "192.0.2.1"}`, `"gateway": {"string": "2001:db8::1"}`
	bond0 := `{"id": "bond0", "bondMode": "802.3ad", "bondLinks": ["eth0"], "macAddress": ` + mac1 + `, "parameters": [{"name": "options", "value": {"miimon": 100}}]}`
	withBond := `{"links": {"ethernets": [` + eth0 + `], "bonds": [` + bond0 + `]}}`
	tests := []struct {
		name       string
		template   string
		bondParams map[string]map[string]intstr.IntOrString
		want       []wantErr
	}{
		{name: "no network data", template: ``},
		{name: "empty network data", template: `{}`},
		{name: "realistic dual-stack template", template: realisticTemplate, bondParams: realisticBondParameters},
		{
			name: "host-dependent sources are left to Compile",
			template: `{"links": {"ethernets": [
					{"type": "phy", "id": "eth0", "macAddress": {"fromHostInterface": "eno1"}},
					{"type": "phy", "id": "eth1", "macAddress": {"fromHostInterface": "eno2"}},
					{"type": "phy", "id": "eth2", "macAddress": {"fromAnnotation": {"object": "BareMetalHost", "annotation": "mac.example.com/eth2"}}}]},
				"networks": {"ipv4": [{"id": "n", "link": "eth0", "fromPoolAnnotation": {"object": "baremetalhost", "annotation": "pool.example.com/v4"},
					"routes": [{"network": "0.0.0.0", "prefix": 0, "gateway": {"fromPoolAnnotation": {"object": "baremetalhost", "annotation": "pool.example.com/gw"}}}]}]}}`,
		},
		// Structure.
		{
			name:     "duplicate link id across link types",
			template: `{"links": {"ethernets": [` + eth0 + `, ` + eth1 + `], "vlans": [{"id": "eth0", "vlanID": 1, "vlanLink": "eth1", "macAddress": ` + mac1 + `}]}}`,
			want: []wantErr{{"spec.networkData.links.vlans[id=eth0].id",
				[]string{`link id "eth0" is also used by spec.networkData.links.ethernets[id=eth0]`, "must be unique"}}},
		},
		{
			name: "duplicate network id",
			template: `{"links": {"ethernets": [` + eth0 + `]}, "networks": {"ipv4DHCP": [{"id": "n", "link": "eth0"}],
				"ipv6SLAAC": [{"id": "n", "link": "eth0"}]}}`,
			want: []wantErr{{"spec.networkData.networks.ipv6SLAAC[id=n].id", []string{`network id "n" is also used`, "must be unique"}}},
		},
		{
			name: "references to undefined links",
			template: `{"links": {"bonds": [{"id": "bond0", "bondMode": "802.3ad", "bondLinks": ["eth1"], "macAddress": ` + mac1 + `}],
				"vlans": [{"id": "v1", "vlanID": 1, "vlanLink": "eth2", "macAddress": ` + mac1 + `}]}, "networks": {"ipv4DHCP": [{"id": "n", "link": "eth3"}]}}`,
			want: []wantErr{
				{"spec.networkData.links.bonds[id=bond0].bondLinks[0]", []string{`link "eth1" is not defined`, "define a link with that id"}},
				{"spec.networkData.links.vlans[id=v1].vlanLink", []string{`link "eth2" is not defined`}},
				{"spec.networkData.networks.ipv4DHCP[id=n].link", []string{`link "eth3" is not defined`}},
			},
		},
		{
			name:     "a link without an id is reported for its id only",
			template: `{"links": {"ethernets": [{"type": "phy", "macAddress": {"string": "nope"}}]}}`,
			want:     []wantErr{{"spec.networkData.links.ethernets[0].id", []string{"is empty", "give every link a unique id"}}},
		},
		// What Ironic's network_data schema requires of links: every problem of
		// every link, each once.
		{
			name: "links Ironic would refuse",
			template: `{"links": {
				"ethernets": [{"type": "ethernet", "id": "eth0", "mtu": 9216}],
				"bonds": [{"id": "bond0", "bondMode": "802.1ad"}],
				"vlans": [{"id": "v1", "vlanLink": "eth0"}]}}`,
			want: []wantErr{
				{"spec.networkData.links.bonds[id=bond0].bondMode", []string{`"802.1ad" is not a bond mode`}},
				{"spec.networkData.links.bonds[id=bond0].bondLinks", []string{"requires bond_links"}},
				{"spec.networkData.links.bonds[id=bond0].macAddress", []string{"requires ethernet_mac_address on every bond"}},
				{"spec.networkData.links.ethernets[id=eth0].type", []string{`"ethernet" is not an ethernet link type`}},
				{"spec.networkData.links.ethernets[id=eth0].mtu", []string{"9216 is outside 1280-9000"}},
				{"spec.networkData.links.ethernets[id=eth0].macAddress", []string{"requires ethernet_mac_address on every ethernet"}},
				{"spec.networkData.links.vlans[id=v1].vlanID", []string{"is not set", "set the VLAN id"}},
				{"spec.networkData.links.vlans[id=v1].macAddress", []string{"requires vlan_mac_address on every vlan"}},
			},
		},
		// MAC sources.
		{
			name:     "invalid MAC string",
			template: `{"links": {"ethernets": [{"type": "phy", "id": "eth0", "macAddress": {"string": "12:34:56:78:9A"}}]}}`,
			want: []wantErr{{"spec.networkData.links.ethernets[id=eth0].macAddress.string",
				[]string{`"12:34:56:78:9A" is not a MAC address`, "six hex pairs"}}},
		},
		{
			name:     "macAddress without a source",
			template: `{"links": {"vlans": [{"id": "v1", "vlanID": 1, "vlanLink": "v2", "macAddress": {}}, {"id": "v2", "vlanID": 2, "vlanLink": "v1", "macAddress": ` + mac1 + `}]}}`,
			want: []wantErr{{"spec.networkData.links.vlans[id=v1].macAddress",
				[]string{"has no source", "set string, fromHostInterface or fromAnnotation"}}},
		},
		{
			name: "MAC from objects that do not exist before provisioning, or at all",
			template: `{"links": {"ethernets": [
				{"type": "phy", "id": "eth0", "macAddress": {"fromAnnotation": {"object": "machine", "annotation": "mac"}}},
				{"type": "phy", "id": "eth1", "macAddress": {"fromAnnotation": {"object": "Metal3Machine", "annotation": "mac"}}},
				{"type": "phy", "id": "eth2", "macAddress": {"fromAnnotation": {"object": "cluster", "annotation": "mac"}}}]}}`,
			want: []wantErr{
				{"spec.networkData.links.ethernets[id=eth0].macAddress.fromAnnotation.object",
					[]string{`"machine" does not exist before provisioning`, "use object baremetalhost", "macAddress.string"}},
				{"spec.networkData.links.ethernets[id=eth1].macAddress.fromAnnotation.object", []string{`"Metal3Machine" does not exist before provisioning`}},
				{"spec.networkData.links.ethernets[id=eth2].macAddress.fromAnnotation.object", []string{`unknown object "cluster"`, "use baremetalhost"}},
			},
		},
		{
			name:     "annotation without a key",
			template: `{"links": {"ethernets": [{"type": "phy", "id": "eth0", "macAddress": {"fromAnnotation": {"object": "baremetalhost"}}}]}}`,
			want:     []wantErr{{"spec.networkData.links.ethernets[id=eth0].macAddress.fromAnnotation.annotation", []string{`annotation "" is missing or empty`}}},
		},
		{
			name: "vlan without vlanID and bond parameters that clash",
			template: `{"links": {"ethernets": [` + eth0 + `], "bonds": [{"id": "bond0", "bondMode": "802.3ad", "bondLinks": ["eth0"], "macAddress": ` + mac1 + `,
				"parameters": [{"name": "mode", "value": "active-backup"}]}], "vlans": [{"id": "v1", "vlanLink": "bond0", "macAddress": ` + mac1 + `}]}}`,
			want: []wantErr{
				{"spec.networkData.links.vlans[id=v1].vlanID", []string{"is not set", "set the VLAN id"}},
				{"spec.networkData.links.bonds[id=bond0].parameters", []string{`"mode" would overwrite`, "use bondMode"}},
			},
		},
		// Address, gateway and DNS sources.
		{
			name:     "network address from a pool of an API group that is no IPAM",
			template: net4(`"fromPoolRef": {"name": "p", "apiGroup": "ipam.example.com", "kind": "ExamplePool"}`),
			want: []wantErr{{"spec.networkData.networks.ipv4[id=n].fromPoolRef",
				[]string{`kind "ExamplePool" of apiGroup "ipam.example.com"`, "Cluster API IPAM provider"}}},
		},
		{
			name: "addresses and a gateway from Cluster API IPAM prefix pools",
			template: `{"links": {"ethernets": [` + eth0 + `]}, "networks": {"ipv4": [{"id": "n", "link": "eth0",
				"fromPoolRef": {"name": "p", "apiGroup": "ipam.cluster.x-k8s.io", "kind": "InClusterPrefixPool"},
				"routes": [{"network": "0.0.0.0", "prefix": 0, "gateway": {"fromPoolRef": {"name": "g", "apiGroup": "ipam.cluster.x-k8s.io", "kind": "GlobalInClusterPrefixPool"}}}]}]}}`,
			want: []wantErr{
				{"spec.networkData.networks.ipv4[id=n].fromPoolRef", []string{`kind "InClusterPrefixPool"`, "a pool of delegated prefixes"}},
				{"spec.networkData.networks.ipv4[id=n].routes[0].gateway.fromPoolRef", []string{`kind "GlobalInClusterPrefixPool"`, "a pool of delegated prefixes"}},
			},
		},
		{
			name: "two pools of one name and different kinds, in different networks",
			template: `{"links": {"ethernets": [` + eth0 + `]}, "networks": {
				"ipv4": [{"id": "a", "link": "eth0", "fromPoolRef": {"name": "rack", "apiGroup": "ipam.cluster.x-k8s.io", "kind": "InClusterIPPool"}}],
				"ipv6": [{"id": "b", "link": "eth0", "ipAddressFromIPPool": "rack"}]}}`,
			want: []wantErr{{"spec.networkData.networks.ipv6[id=b].ipAddressFromIPPool",
				[]string{`refers to IPPool "rack"`, `also takes addresses from InClusterIPPool "rack"`}}},
		},
		{
			name:     "route gateway pool from a Machine annotation",
			template: route4(`{"network": "0.0.0.0", "prefix": 0, "gateway": {"fromPoolAnnotation": {"object": "machine", "annotation": "pool"}}}`),
			want: []wantErr{{"spec.networkData.networks.ipv4[id=n].routes[0].gateway.fromPoolAnnotation.object",
				[]string{"does not exist before provisioning", "string, fromIPPool or fromPoolRef"}}},
		},
		{
			name: "route gateway annotations on DHCP and SLAAC networks",
			template: `{"links": {"ethernets": [` + eth0 + `]}, "networks": {
				"ipv4DHCP": [{"id": "a", "link": "eth0", "routes": [{"network": "0.0.0.0", "gateway": {"fromPoolAnnotation": {"object": "baremetalhost", "annotation": "gw4"}}}]}],
				"ipv6DHCP": [{"id": "b", "link": "eth0", "routes": [{"network": "::", "gateway": {"fromPoolAnnotation": {"object": "baremetalhost", "annotation": "gw6"}}}]}],
				"ipv6SLAAC": [{"id": "c", "link": "eth0", "routes": [{"network": "::", "gateway": {"string": "fe80::1", "fromPoolAnnotation": {"object": "baremetalhost", "annotation": "gw6"}}},
					{"network": "2001:db8::", "prefix": 32, "gateway": {"fromPoolAnnotation": {"object": "machine", "annotation": "gw6"}}}]}]}}`,
			want: []wantErr{
				{"spec.networkData.networks.ipv4DHCP[id=a].routes[0].gateway.fromPoolAnnotation",
					[]string{"is not supported on a route of an ipv4DHCP network", "CAPM3 claims no address from that pool there", "use fromIPPool, fromPoolRef or string"}},
				{"spec.networkData.networks.ipv6DHCP[id=b].routes[0].gateway.fromPoolAnnotation", []string{"on a route of an ipv6DHCP network"}},
				// A gateway string wins over the annotation, as in CAPM3: routes[0] is fine.
				{"spec.networkData.networks.ipv6SLAAC[id=c].routes[1].gateway.fromPoolAnnotation", []string{"on a route of an ipv6SLAAC network"}},
			},
		},
		{
			name:     "static network without an address source",
			template: net4(`"routes": []`),
			want:     []wantErr{{"spec.networkData.networks.ipv4[id=n]", []string{"has no address source", "set ipAddressFromIPPool, fromPoolRef or fromPoolAnnotation"}}},
		},
		// Prefixes and addresses.
		{
			name:     "IPv4 route prefix 33",
			template: route4(`{"network": "10.0.0.0", "prefix": 33, ` + gw4 + `}`),
			want:     []wantErr{{"spec.networkData.networks.ipv4[id=n].routes[0].prefix", []string{"33 is not a valid IPv4 prefix length", "use 0-32"}}},
		},
		{
			name:     "IPv4 host route",
			template: route4(`{"network": "10.0.0.1", "prefix": 32, ` + gw4 + `}`),
			want:     []wantErr{{"spec.networkData.networks.ipv4[id=n].routes[0].prefix", []string{"255.255.255.255, which Ironic's network_data schema refuses"}}},
		},
		{
			name:     "IPv6 route prefix 129",
			template: route6(`{"network": "2001:db8::", "prefix": 129, ` + gw6 + `}`),
			want:     []wantErr{{"spec.networkData.networks.ipv6DHCP[id=n].routes[0].prefix", []string{"129 is not a valid IPv6 prefix length", "use 0-128"}}},
		},
		{
			name:     "route without a gateway",
			template: route6(`{"network": "::", "gateway": {}}`),
			want:     []wantErr{{"spec.networkData.networks.ipv6DHCP[id=n].routes[0].gateway", []string{"has no source", "requires a gateway on every route"}}},
		},
		{
			name: "route addresses of the wrong family or malformed",
			template: route4(`{"network": "2001:db8::", "prefix": 8, "gateway": {"string": "10.0.0.256"},
				"services": {"dns": ["10.0.0.53", "fe80::53%eth0"]}}`),
			want: []wantErr{
				{"spec.networkData.networks.ipv4[id=n].routes[0].network", []string{`"2001:db8::" is not an IPv4 address`, "write it like 192.0.2.1"}},
				{"spec.networkData.networks.ipv4[id=n].routes[0].gateway.string", []string{`"10.0.0.256" is not an IPv4 address`}},
				{"spec.networkData.networks.ipv4[id=n].routes[0].services.dns[1]", []string{`"fe80::53%eth0" is not an IPv4 address`}},
			},
		},
		{
			name:     "IPv6 route on an IPv4 network address",
			template: route6(`{"network": "10.0.0.0", "prefix": 8, ` + gw6 + `}`),
			want:     []wantErr{{"spec.networkData.networks.ipv6DHCP[id=n].routes[0].network", []string{`"10.0.0.0" is not an IPv6 address`, "2001:db8::1"}}},
		},
		{
			name:     "route network with host bits set",
			template: route4(`{"network": "10.0.0.1", "prefix": 24, ` + gw4 + `}`),
			want: []wantErr{{"spec.networkData.networks.ipv4[id=n].routes[0].network",
				[]string{`"10.0.0.1" has host bits set for prefix 24`, `use the network address "10.0.0.0", or fix prefix`}}},
		},
		{
			name:     "route network without a prefix is a /0",
			template: route6(`{"network": "2001:DB8::", ` + gw6 + `}`),
			want: []wantErr{{"spec.networkData.networks.ipv6DHCP[id=n].routes[0].network",
				[]string{"host bits set for prefix 0 (prefix is unset)", `"::"`}}},
		},
		{
			name:     "IPv6 addresses in upper case, with leading zeros or compressed",
			template: route6(`{"network": "2001:DB8:0::", "prefix": 32, "gateway": {"string": "2001:0db8::0001"}, "services": {"dns": ["::FFFF:C000:235"]}}`),
		},
		{
			name:     "IPv6 addresses with a dotted IPv4 part",
			template: route6(`{"network": "::", ` + gw6 + `, "services": {"dns": ["::ffff:192.0.2.53"]}}`),
			want: []wantErr{{"spec.networkData.networks.ipv6DHCP[id=n].routes[0].services.dns[0]",
				[]string{"dotted IPv4 part", `write its eight hex groups, "0000:0000:0000:0000:0000:ffff:c000:0235"`}}},
		},
		{
			name:     "top-level DNS of either family, but valid",
			template: `{"services": {"dns": ["192.0.2.53", "2001:db8::53", "dns.example.com"]}}`,
			want:     []wantErr{{"spec.networkData.services.dns[2]", []string{`"dns.example.com" is not an IP address`, "192.0.2.1 or 2001:db8::1"}}},
		},
		// Bond parameters of our template kind.
		{
			name:       "bond parameters for the template's bond",
			template:   withBond,
			bondParams: map[string]map[string]intstr.IntOrString{"bond0": {"miimon": intstr.FromInt32(100), "lacp_rate": intstr.FromString("fast"), "ad_select": intstr.FromString("bandwidth")}},
		},
		{
			name:     "every problem of the bond parameters",
			template: withBond,
			bondParams: map[string]map[string]intstr.IntOrString{
				"bond1": {"miimon": intstr.FromInt32(100)},
				"bond0": {"options": intstr.FromInt32(1), "mode": intstr.FromString("active-backup"), "Miimon": intstr.FromInt32(100), "updelay": intstr.FromString("")},
			},
			want: []wantErr{
				{"spec.bondParameters[bond0][Miimon]", []string{`"Miimon" is not a bond parameter name`}},
				{"spec.bondParameters[bond0][mode]", []string{"the bond's bondMode sets"}},
				{"spec.bondParameters[bond0][options]", []string{"spec.networkData.links.bonds[id=bond0].parameters[options] renders too"}},
				{"spec.bondParameters[bond0][updelay]", []string{`"" is not a value the network tools can write`}},
				{"spec.bondParameters[bond1]", []string{`names no bond of spec.networkData.links.bonds (it has "bond0")`}},
			},
		},
		// Many problems at once.
		{
			name: "every problem is reported, in template order",
			template: `{"links": {"ethernets": [
					{"type": "phy", "id": "eth0", "macAddress": {"string": "bad"}},
					{"type": "phy", "id": "eth1", "macAddress": {"fromAnnotation": {"object": "machine", "annotation": "mac"}}}]},
				"networks": {
					"ipv4": [{"id": "n", "link": "eth9", "fromPoolRef": {"name": "p", "apiGroup": "ipam.example.com"},
						"routes": [{"network": "10.0.0.0", "prefix": 33, ` + gw4 + `}, {"network": "10.0.0.1", "prefix": 8, "gateway": {}}]}],
					"ipv4DHCP": [{"id": "n", "link": "eth0"}]}}`,
			want: []wantErr{
				{"spec.networkData.networks.ipv4[id=n].link", []string{`link "eth9" is not defined`}},
				{"spec.networkData.networks.ipv4DHCP[id=n].id", []string{`network id "n" is also used`}},
				{"spec.networkData.links.ethernets[id=eth0].macAddress.string", []string{`"bad" is not a MAC address`}},
				{"spec.networkData.links.ethernets[id=eth1].macAddress.fromAnnotation.object", []string{"does not exist before provisioning"}},
				{"spec.networkData.networks.ipv4[id=n].fromPoolRef", []string{`apiGroup "ipam.example.com"`}},
				{"spec.networkData.networks.ipv4[id=n].routes[0].prefix", []string{"33 is not a valid IPv4 prefix length"}},
				{"spec.networkData.networks.ipv4[id=n].routes[1].network", []string{"host bits set for prefix 8"}},
				{"spec.networkData.networks.ipv4[id=n].routes[1].gateway", []string{"has no source"}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := ValidateTemplate(template(t, tt.template), WithBondParameters(tt.bondParams))
			requireErrors(t, errs, tt.want)
		})
	}
}

// Without the network data (a dataTemplateRef, for the webhook) only what
// the bond parameters say themselves is checked.
func TestValidateTemplateWithoutNetworkData(t *testing.T) {
	errs := ValidateTemplate(nil, WithBondParameters(map[string]map[string]intstr.IntOrString{
		"bond0": {"miimon": intstr.FromInt32(100), "bond_lacp_rate": intstr.FromString("fast")},
		"bond1": {"downdelay": intstr.FromInt32(-200)},
	}))
	requireErrors(t, errs, []wantErr{
		{"spec.bondParameters[bond0][bond_lacp_rate]", []string{"starts with bond_", `write "lacp_rate"`}},
		{"spec.bondParameters[bond1][downdelay]", []string{"-200 is negative"}},
	})
	assert.Empty(t, ValidateTemplate(nil), "no options, nothing to check")
}

func requireErrors(t *testing.T, errs []*InputError, want []wantErr) {
	t.Helper()
	got := make([]string, len(errs))
	for i, err := range errs {
		got[i] = err.Field
		assert.NotContains(t, err.Error(), "\n", "messages go into Events and must be one line")
		require.ErrorIs(t, err, ErrInvalidInput)
	}
	wantFields := make([]string, len(want))
	for i, w := range want {
		wantFields[i] = w.field
	}
	require.Equal(t, wantFields, got, "fields of %v", errs)
	for i, w := range want {
		for _, s := range w.contains {
			assert.Contains(t, errs[i].Reason, s)
		}
	}
}

// FuzzValidateTemplate checks ValidateTemplate against Render's own checks:
// whatever Compile refuses for the most accommodating host is a problem no
// host can fix, so ValidateTemplate must report it too; and a template it
// accepts renders for that host.
func FuzzValidateTemplate(f *testing.F) {
	f.Add(realisticTemplate, `{"bond0": {"miimon": 100, "lacp_rate": "fast"}}`)
	f.Add(`{}`, `null`)
	f.Add(`{"links": {"vlans": [{"id": "v", "vlanLink": "v", "macAddress": {"fromAnnotation": {"object": "machine", "annotation": "a"}}}]},
		"networks": {"ipv6": [{"id": "n", "link": "v", "fromPoolRef": {"name": "p", "apiGroup": "ipam.cluster.x-k8s.io"}}]}}`, `{"v": {"x": 1}}`)
	f.Add(`{"links": {"ethernets": [{"type": "phy", "id": "e", "mtu": 1500, "macAddress": {"fromHostInterface": "eno1"}}, {"type": "phy", "macAddress": {}}],
		"bonds": [{"id": "b", "bondMode": "802.3ad", "bondLinks": ["e", "x"], "parameters": [{"name": "links"}]}]},
		"networks": {"ipv4": [{"id": "n", "link": "b", "routes": [{"network": "10.0.0.1", "prefix": 40, "gateway": {"string": "x"}}]}],
			"ipv4DHCP": [{"id": "d", "link": "e", "routes": [{"network": "0.0.0.0", "gateway": {"fromPoolAnnotation": {"object": "baremetalhost", "annotation": "g"}}}]}]},
		"services": {"dns": ["x"]}}`, `{"b": {"links": "e", "miimon": -1, "lacp_rate": "fast"}}`)

	f.Fuzz(func(t *testing.T, ndJSON, bondParamsJSON string) {
		var nd *capm3.NetworkData
		var bondParams map[string]map[string]intstr.IntOrString
		if json.Unmarshal([]byte(ndJSON), &nd) != nil || json.Unmarshal([]byte(bondParamsJSON), &bondParams) != nil {
			t.Skip("not a template or bond parameters")
		}
		opts := WithBondParameters(bondParams)
		errs := ValidateTemplate(nd, opts)
		for _, err := range errs {
			requireOneLineError(t, err)
			require.Regexp(t, `^spec\.(networkData|bondParameters)[.\[]`, err.Field)
		}
		if nd == nil {
			return
		}
		_, compileErr := Compile(nd, stubHost(linkSpecs(nd.Links), networkSpecs(nd.Networks)), opts)
		if compileErr == nil {
			return
		}
		var first *InputError
		require.ErrorAs(t, compileErr, &first)
		require.Contains(t, errs, first, "ValidateTemplate missed what Compile refuses for every host")
	})
}
