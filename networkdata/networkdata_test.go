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
	"errors"
	"strings"
	"testing"

	capm3 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// template decodes a spec.networkData written as in a Metal3DataTemplate;
// unknown fields fail the test so a typo cannot silently drop a case. A link
// without mtu gets 1500, as the API server's CRD default gives it.
func template(tb testing.TB, doc string) *capm3.NetworkData {
	tb.Helper()
	if doc == "" {
		return nil
	}
	dec := json.NewDecoder(strings.NewReader(doc))
	dec.DisallowUnknownFields()
	nd := &capm3.NetworkData{}
	require.NoError(tb, dec.Decode(nd))
	if nd.Links != nil {
		for i := range nd.Links.Bonds {
			defaultMTU(&nd.Links.Bonds[i].MTU)
		}
		for i := range nd.Links.Ethernets {
			defaultMTU(&nd.Links.Ethernets[i].MTU)
		}
		for i := range nd.Links.Vlans {
			defaultMTU(&nd.Links.Vlans[i].MTU)
		}
	}
	return nd
}

func defaultMTU(mtu *int32) {
	if *mtu == 0 {
		*mtu = 1500
	}
}

const emptyDoc = `{"links": [], "networks": [], "services": []}`

// Links most cases stand on.
const (
	eth0    = `{"type": "phy", "id": "eth0", "macAddress": {"string": "52:54:00:00:00:01"}}`
	eth0Out = `{"type": "phy", "id": "eth0", "mtu": 1500, "ethernet_mac_address": "52:54:00:00:00:01"}`
	eth1    = `{"type": "phy", "id": "eth1", "macAddress": {"string": "52:54:00:00:00:02"}}`
	eth1Out = `{"type": "phy", "id": "eth1", "mtu": 1500, "ethernet_mac_address": "52:54:00:00:00:02"}`
	mac1    = `{"string": "52:54:00:00:00:01"}`
)

// Pools shared by most cases, as Metal3 IPAM would hand them out.
var pools = map[string]Address{
	"v4":     {IP: "192.168.0.14", Prefix: 24, Gateway: "192.168.0.1", DNSServers: []string{"192.168.0.53", "192.168.0.54"}},
	"v6":     {IP: "2001:db8::14", Prefix: 64, Gateway: "2001:db8::1", DNSServers: []string{"2001:db8::53"}},
	"abc":    {IP: "10.1.0.5", Prefix: 16, Gateway: "192.168.2.1", DNSServers: []string{"1.1.1.1"}},
	"abc6":   {IP: "fe80::5", Prefix: 96, Gateway: "fe80::1", DNSServers: []string{"fe80:2001::1111"}},
	"nogw":   {IP: "172.16.0.9", Prefix: 12},
	"ann-v4": {IP: "192.168.10.20", Prefix: 24, Gateway: "192.168.10.1"},
}

// Every rendered document is checked against Ironic's network_data schema.
func TestRender(t *testing.T) {
	tests := []struct {
		name     string
		template string
		host     Host
		opts     []Option
		want     string
	}{
		{
			name: "nil network data renders empty lists",
			want: emptyDoc,
		},
		{
			name:     "empty network data renders empty lists",
			template: `{}`,
			want:     emptyDoc,
		},
		{
			name:     "empty sections render empty lists",
			template: `{"links": {}, "networks": {}, "services": {}}`,
			want:     emptyDoc,
		},
		{
			// CAPM3 renderNetworkData test "Full example", with the network on a
			// defined link; network_id is ours (Ironic requires it).
			name: "CAPM3 full example",
			template: `{
				"links": {"ethernets": [{"type": "phy", "id": "eth0", "mtu": 1500, "macAddress": {"string": "12:34:56:78:9A:BC"}}]},
				"networks": {"ipv4": [{"id": "abc", "link": "eth0", "ipAddressFromIPPool": "v4",
					"routes": [{"network": "10.0.0.0", "prefix": 16, "gateway": {"string": "192.168.1.1"}, "services": {"dns": ["8.8.8.8"]}}]}]},
				"services": {"dns": ["8.8.8.8", "2001::8888"]}
			}`,
			want: `{
				"links": [{"type": "phy", "id": "eth0", "mtu": 1500, "ethernet_mac_address": "12:34:56:78:9A:BC"}],
				"networks": [{"type": "ipv4", "id": "abc", "network_id": "abc", "link": "eth0", "ip_address": "192.168.0.14", "netmask": "255.255.255.0",
					"routes": [{"network": "10.0.0.0", "netmask": "255.255.0.0", "gateway": "192.168.1.1", "services": [{"type": "dns", "address": "8.8.8.8"}]}]}],
				"services": [{"type": "dns", "address": "8.8.8.8"}, {"type": "dns", "address": "2001::8888"}]
			}`,
		},
		{
			name: "ethernets with and without name, of the types Ironic accepts",
			template: `{"links": {"ethernets": [
				{"type": "phy", "id": "eth0", "name": "enp1s0", "mtu": 9000, "macAddress": {"string": "52:54:00:00:00:01"}},
				{"type": "bridge", "id": "br0", "mtu": 1280, "macAddress": {"string": "52:54:00:00:00:02"}},
				{"type": "vhostuser", "id": "vh0", "macAddress": {"string": "52:54:00:00:00:03"}}
			]}}`,
			want: `{"links": [
				{"type": "phy", "id": "eth0", "name": "enp1s0", "mtu": 9000, "ethernet_mac_address": "52:54:00:00:00:01"},
				{"type": "bridge", "id": "br0", "mtu": 1280, "ethernet_mac_address": "52:54:00:00:00:02"},
				{"type": "vhostuser", "id": "vh0", "mtu": 1500, "ethernet_mac_address": "52:54:00:00:00:03"}
			], "networks": [], "services": []}`,
		},
		{
			name: "bond with parameters of every JSON type",
			template: `{"links": {
				"ethernets": [` + eth0 + `, ` + eth1 + `],
				"bonds": [{"id": "bond0", "name": "bond-data", "bondMode": "802.3ad", "bondXmitHashPolicy": "layer3+4", "mtu": 9000,
					"macAddress": {"string": "11:22:33:44:55:66"}, "bondLinks": ["eth0", "eth1"],
					"parameters": [
						{"name": "miimon", "value": 100},
						{"name": "lacp_rate", "value": "fast"},
						{"name": "use_carrier", "value": true},
						{"name": "arp_ip_target", "value": ["10.0.0.1", "10.0.0.2"]},
						{"name": "options", "value": {"z": 1, "a": {"b": 1.50}}},
						{"name": "unset"},
						{"name": "big", "value": 12345678901234567890}
					]}]
			}}`,
			want: `{"links": [
				{"type": "bond", "id": "bond0", "name": "bond-data", "mtu": 9000, "ethernet_mac_address": "11:22:33:44:55:66",
					"bond_mode": "802.3ad", "bond_xmit_hash_policy": "layer3+4", "bond_links": ["eth0", "eth1"],
					"bond_miimon": 100, "bond_lacp_rate": "fast", "bond_use_carrier": true,
					"bond_arp_ip_target": ["10.0.0.1", "10.0.0.2"], "bond_options": {"z": 1, "a": {"b": 1.50}},
					"bond_unset": null, "bond_big": 12345678901234567890},
				` + eth0Out + `, ` + eth1Out + `
			], "networks": [], "services": []}`,
		},
		{
			// A CAPM3 parameter without a value is a placeholder that a scalar
			// parameter of its name fills; one not filled renders null, as in CAPM3.
			name: "scalar bond parameters beside CAPM3's parameters, or in place of a placeholder",
			template: `{"links": {
				"ethernets": [` + eth0 + `, ` + eth1 + `],
				"bonds": [
					{"id": "bond0", "bondMode": "802.3ad", "bondXmitHashPolicy": "layer2+3", "macAddress": ` + mac1 + `, "bondLinks": ["eth0", "eth1"],
						"parameters": [{"name": "options", "value": {"miimon": 100}}]},
					{"id": "bond1", "bondMode": "active-backup", "macAddress": ` + mac1 + `, "bondLinks": ["eth1"],
						"parameters": [{"name": "primary"}, {"name": "fail_over_mac"}]}
				]
			}}`,
			opts: []Option{WithBondParameters(map[string]map[string]intstr.IntOrString{
				"bond0": {"miimon": intstr.FromInt32(100), "lacp_rate": intstr.FromString("fast"), "updelay": intstr.FromInt32(0)},
				"bond1": {"primary": intstr.FromString("eth1"), "num_grat_arp": intstr.FromString("3")},
			})},
			want: `{"links": [
				{"type": "bond", "id": "bond0", "mtu": 1500, "ethernet_mac_address": "52:54:00:00:00:01",
					"bond_mode": "802.3ad", "bond_xmit_hash_policy": "layer2+3", "bond_links": ["eth0", "eth1"],
					"bond_options": {"miimon": 100}, "bond_miimon": 100, "bond_lacp_rate": "fast", "bond_updelay": 0},
				{"type": "bond", "id": "bond1", "mtu": 1500, "ethernet_mac_address": "52:54:00:00:00:01",
					"bond_mode": "active-backup", "bond_xmit_hash_policy": "", "bond_links": ["eth1"],
					"bond_primary": "eth1", "bond_fail_over_mac": null, "bond_num_grat_arp": "3"},
				` + eth0Out + `, ` + eth1Out + `
			], "networks": [], "services": []}`,
		},
		{
			// CAPM3 renders an unset policy as "".
			name:     "bond without a hash policy",
			template: `{"links": {"ethernets": [` + eth0 + `], "bonds": [{"id": "bond0", "bondMode": "active-backup", "macAddress": ` + mac1 + `, "bondLinks": ["eth0"]}]}}`,
			want: `{"links": [{"type": "bond", "id": "bond0", "mtu": 1500, "ethernet_mac_address": "52:54:00:00:00:01", "bond_mode": "active-backup",
				"bond_xmit_hash_policy": "", "bond_links": ["eth0"]}, ` + eth0Out + `], "networks": [], "services": []}`,
		},
		{
			name: "vlans with and without name",
			template: `{"links": {
				"ethernets": [` + eth0 + `],
				"vlans": [
					{"id": "vlan100", "name": "vlan-storage", "vlanID": 100, "vlanLink": "eth0", "mtu": 9000, "macAddress": {"string": "AA:BB:CC:DD:EE:00"}},
					{"id": "vlan0", "vlanID": 0, "vlanLink": "eth0", "macAddress": {"string": "AA-BB-CC-DD-EE-01"}}
				]
			}}`,
			want: `{"links": [
				` + eth0Out + `,
				{"type": "vlan", "id": "vlan100", "name": "vlan-storage", "mtu": 9000, "vlan_mac_address": "AA:BB:CC:DD:EE:00", "vlan_id": 100, "vlan_link": "eth0"},
				{"type": "vlan", "id": "vlan0", "mtu": 1500, "vlan_mac_address": "AA-BB-CC-DD-EE-01", "vlan_id": 0, "vlan_link": "eth0"}
			], "networks": [], "services": []}`,
		},
		{
			name: "links render bonds, then ethernets, then vlans",
			template: `{"links": {
				"vlans": [{"id": "vlan200", "vlanID": 200, "vlanLink": "bond0", "macAddress": ` + mac1 + `}],
				"ethernets": [` + eth0 + `],
				"bonds": [{"id": "bond0", "bondMode": "balance-alb", "macAddress": ` + mac1 + `, "bondLinks": ["eth0"]}]
			}}`,
			want: `{"links": [
				{"type": "bond", "id": "bond0", "mtu": 1500, "ethernet_mac_address": "52:54:00:00:00:01", "bond_mode": "balance-alb", "bond_xmit_hash_policy": "", "bond_links": ["eth0"]},
				` + eth0Out + `,
				{"type": "vlan", "id": "vlan200", "mtu": 1500, "vlan_mac_address": "52:54:00:00:00:01", "vlan_id": 200, "vlan_link": "bond0"}
			], "networks": [], "services": []}`,
		},
		{
			name: "every network type, in CAPM3's order, each with network_id",
			template: `{
				"links": {"ethernets": [` + eth0 + `]},
				"networks": {
					"ipv6SLAAC": [{"id": "slaac", "link": "eth0"}],
					"ipv6DHCP": [{"id": "dhcp6", "link": "eth0"}],
					"ipv4DHCP": [{"id": "dhcp4", "link": "eth0"}],
					"ipv6": [{"id": "static6", "link": "eth0", "fromPoolRef": {"name": "v6", "apiGroup": "ipam.metal3.io", "kind": "IPPool"}}],
					"ipv4": [{"id": "static4", "link": "eth0", "fromPoolRef": {"name": "v4"}}]
				}
			}`,
			want: `{"links": [` + eth0Out + `], "networks": [
				{"type": "ipv4", "id": "static4", "network_id": "static4", "link": "eth0", "ip_address": "192.168.0.14", "netmask": "255.255.255.0", "routes": []},
				{"type": "ipv6", "id": "static6", "network_id": "static6", "link": "eth0", "ip_address": "2001:db8::14", "netmask": "ffff:ffff:ffff:ffff::", "routes": []},
				{"type": "ipv4_dhcp", "id": "dhcp4", "network_id": "dhcp4", "link": "eth0", "routes": []},
				{"type": "ipv6_dhcp", "id": "dhcp6", "network_id": "dhcp6", "link": "eth0", "routes": []},
				{"type": "ipv6_slaac", "id": "slaac", "network_id": "slaac", "link": "eth0", "routes": []}
			], "services": []}`,
		},
		{
			// CAPM3 getRoutesv4 test, plus a gateway from a BareMetalHost annotation.
			name: "IPv4 routes with every gateway source",
			host: Host{Annotations: map[string]string{"pool.example.com/gw": "abc"}},
			template: `{
				"links": {"ethernets": [` + eth0 + `]},
				"networks": {"ipv4": [{"id": "net", "link": "eth0", "ipAddressFromIPPool": "v4", "routes": [
					{"network": "192.168.0.0", "prefix": 24, "gateway": {"string": "192.168.1.1"}},
					{"network": "10.0.0.0", "prefix": 16, "gateway": {"fromIPPool": "abc"}, "services": {"dns": ["8.8.8.8", "8.8.4.4"], "dnsFromIPPool": "abc"}},
					{"network": "0.0.0.0", "gateway": {"fromPoolRef": {"name": "abc"}}},
					{"network": "172.16.0.0", "prefix": 12, "gateway": {"fromPoolAnnotation": {"object": "baremetalhost", "annotation": "pool.example.com/gw"}}},
					{"network": "172.17.0.0", "prefix": 31, "gateway": {"fromIPPool": "v4"}},
					{"network": "10.9.0.0", "prefix": 16, "gateway": {"string": "10.9.0.1", "fromIPPool": "abc"}}
				]}]}
			}`,
			want: `{"links": [` + eth0Out + `], "networks": [
				{"type": "ipv4", "id": "net", "network_id": "net", "link": "eth0", "ip_address": "192.168.0.14", "netmask": "255.255.255.0", "routes": [
					{"network": "192.168.0.0", "netmask": "255.255.255.0", "gateway": "192.168.1.1", "services": []},
					{"network": "10.0.0.0", "netmask": "255.255.0.0", "gateway": "192.168.2.1", "services": [
						{"type": "dns", "address": "8.8.8.8"}, {"type": "dns", "address": "8.8.4.4"}, {"type": "dns", "address": "1.1.1.1"}]},
					{"network": "0.0.0.0", "netmask": "0.0.0.0", "gateway": "192.168.2.1", "services": []},
					{"network": "172.16.0.0", "netmask": "255.240.0.0", "gateway": "192.168.2.1", "services": []},
					{"network": "172.17.0.0", "netmask": "255.255.255.254", "gateway": "192.168.0.1", "services": []},
					{"network": "10.9.0.0", "netmask": "255.255.0.0", "gateway": "10.9.0.1", "services": []}
				]}
			], "services": []}`,
		},
		{
			// CAPM3 getRoutesv6 test, on an ipv6 network.
			name: "IPv6 routes with every gateway source and IPv6 netmasks",
			host: Host{Annotations: map[string]string{"pool.example.com/gw6": "abc6"}},
			template: `{
				"links": {"ethernets": [` + eth0 + `]},
				"networks": {"ipv6": [{"id": "net6", "link": "eth0", "ipAddressFromIPPool": "abc6", "routes": [
					{"network": "2001::0", "prefix": 96, "gateway": {"string": "2001::1"}},
					{"network": "fe80::0", "prefix": 64, "gateway": {"fromIPPool": "abc6"}, "services": {"dns": ["fe80:2001::8888", "fe80:2001::8844"], "dnsFromIPPool": "abc6"}},
					{"network": "::", "gateway": {"fromPoolRef": {"name": "abc6", "apiGroup": "ipam.metal3.io"}}},
					{"network": "2001:db8:1::", "prefix": 48, "gateway": {"fromPoolAnnotation": {"object": "BareMetalHost", "annotation": "pool.example.com/gw6"}}},
					{"network": "2001:db8:2::1", "prefix": 128, "gateway": {"string": "2001::1"}},
					{"network": "2001:db8:3::", "prefix": 65, "gateway": {"string": "2001::1"}}
				]}]}
			}`,
			want: `{"links": [` + eth0Out + `], "networks": [
				{"type": "ipv6", "id": "net6", "network_id": "net6", "link": "eth0", "ip_address": "fe80::5", "netmask": "ffff:ffff:ffff:ffff:ffff:ffff::", "routes": [
					{"network": "2001::0", "netmask": "ffff:ffff:ffff:ffff:ffff:ffff::", "gateway": "2001::1", "services": []},
					{"network": "fe80::0", "netmask": "ffff:ffff:ffff:ffff::", "gateway": "fe80::1", "services": [
						{"type": "dns", "address": "fe80:2001::8888"}, {"type": "dns", "address": "fe80:2001::8844"}, {"type": "dns", "address": "fe80:2001::1111"}]},
					{"network": "::", "netmask": "::", "gateway": "fe80::1", "services": []},
					{"network": "2001:db8:1::", "netmask": "ffff:ffff:ffff::", "gateway": "fe80::1", "services": []},
					{"network": "2001:db8:2::1", "netmask": "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "gateway": "2001::1", "services": []},
					{"network": "2001:db8:3::", "netmask": "ffff:ffff:ffff:ffff:8000::", "gateway": "2001::1", "services": []}
				]}
			], "services": []}`,
		},
		{
			name: "DHCP and SLAAC networks carry routes with pool gateways and DNS",
			template: `{
				"links": {"ethernets": [` + eth0 + `]},
				"networks": {
					"ipv4DHCP": [{"id": "d4", "link": "eth0", "routes": [
						{"network": "10.0.0.0", "prefix": 8, "gateway": {"fromPoolRef": {"name": "ann-v4"}}, "services": {"dnsFromIPPool": "v4"}}]}],
					"ipv6DHCP": [{"id": "d6", "link": "eth0", "routes": [
						{"network": "2001:db8::", "prefix": 32, "gateway": {"fromPoolRef": {"name": "v6"}}}]}],
					"ipv6SLAAC": [{"id": "s6", "link": "eth0", "routes": [
						{"network": "::", "prefix": 0, "gateway": {"fromIPPool": "v6"}, "services": {"dns": ["2001:4860:4860::8888"]}}]}]
				}
			}`,
			want: `{"links": [` + eth0Out + `], "networks": [
				{"type": "ipv4_dhcp", "id": "d4", "network_id": "d4", "link": "eth0", "routes": [
					{"network": "10.0.0.0", "netmask": "255.0.0.0", "gateway": "192.168.10.1", "services": [
						{"type": "dns", "address": "192.168.0.53"}, {"type": "dns", "address": "192.168.0.54"}]}]},
				{"type": "ipv6_dhcp", "id": "d6", "network_id": "d6", "link": "eth0", "routes": [
					{"network": "2001:db8::", "netmask": "ffff:ffff::", "gateway": "2001:db8::1", "services": []}]},
				{"type": "ipv6_slaac", "id": "s6", "network_id": "s6", "link": "eth0", "routes": [
					{"network": "::", "netmask": "::", "gateway": "2001:db8::1", "services": [{"type": "dns", "address": "2001:4860:4860::8888"}]}]}
			], "services": []}`,
		},
		{
			name:     "DNS services from the template, then from a pool",
			template: `{"services": {"dns": ["8.8.8.8", "2001::8888"], "dnsFromIPPool": "v4"}}`,
			want: `{"links": [], "networks": [], "services": [
				{"type": "dns", "address": "8.8.8.8"}, {"type": "dns", "address": "2001::8888"},
				{"type": "dns", "address": "192.168.0.53"}, {"type": "dns", "address": "192.168.0.54"}]}`,
		},
		{
			name:     "DNS services from a pool without DNS servers",
			template: `{"services": {"dnsFromIPPool": "nogw"}}`,
			want:     emptyDoc,
		},
		{
			name: "network address from a BareMetalHost annotation wins over the other sources",
			host: Host{Annotations: map[string]string{"ippool.metal3.io/test-network": "ann-v4"}},
			template: `{
				"links": {"ethernets": [` + eth0 + `]},
				"networks": {"ipv4": [{"id": "net1", "link": "eth0", "ipAddressFromIPPool": "v4", "fromPoolRef": {"name": "abc"},
					"fromPoolAnnotation": {"object": "baremetalhost", "annotation": "ippool.metal3.io/test-network"}}]}
			}`,
			want: `{"links": [` + eth0Out + `], "networks": [
				{"type": "ipv4", "id": "net1", "network_id": "net1", "link": "eth0", "ip_address": "192.168.10.20", "netmask": "255.255.255.0", "routes": []}
			], "services": []}`,
		},
		{
			name: "fromPoolRef wins over ipAddressFromIPPool",
			template: `{
				"links": {"ethernets": [` + eth0 + `]},
				"networks": {"ipv4": [{"id": "n", "link": "eth0", "ipAddressFromIPPool": "v4", "fromPoolRef": {"name": "nogw"}}]}
			}`,
			want: `{"links": [` + eth0Out + `], "networks": [
				{"type": "ipv4", "id": "n", "network_id": "n", "link": "eth0", "ip_address": "172.16.0.9", "netmask": "255.240.0.0", "routes": []}
			], "services": []}`,
		},
		{
			name: "MAC from the host's NICs by exact name",
			host: Host{BootMACAddress: "00:00:00:00:00:01", NICs: []NIC{
				{Name: "eno1", MAC: "12:34:56:78:9a:bc"}, {}, {Name: "ENO2", MAC: "de:f0:12:34:56:78"}, {Name: "eno2", MAC: "de:f0:12:34:56:79"},
			}},
			template: `{"links": {
				"ethernets": [{"type": "phy", "id": "eth0", "macAddress": {"fromHostInterface": "eno1"}}, {"type": "phy", "id": "eth1", "macAddress": {"fromHostInterface": "eno2"}}],
				"bonds": [{"id": "bond0", "bondMode": "active-backup", "bondLinks": ["eth0", "eth1"], "macAddress": {"fromHostInterface": "eno1"}}],
				"vlans": [{"id": "v5", "vlanID": 5, "vlanLink": "bond0", "macAddress": {"fromHostInterface": "ENO2"}}]
			}}`,
			want: `{"links": [
				{"type": "bond", "id": "bond0", "mtu": 1500, "ethernet_mac_address": "12:34:56:78:9a:bc", "bond_mode": "active-backup", "bond_xmit_hash_policy": "", "bond_links": ["eth0", "eth1"]},
				{"type": "phy", "id": "eth0", "mtu": 1500, "ethernet_mac_address": "12:34:56:78:9a:bc"},
				{"type": "phy", "id": "eth1", "mtu": 1500, "ethernet_mac_address": "de:f0:12:34:56:79"},
				{"type": "vlan", "id": "v5", "mtu": 1500, "vlan_mac_address": "de:f0:12:34:56:78", "vlan_id": 5, "vlan_link": "bond0"}
			], "networks": [], "services": []}`,
		},
		{
			name: "MAC from a BareMetalHost annotation, object name in any case",
			host: Host{Annotations: map[string]string{"mac.example.com/eth0": "52-54-00-12-34-56", "mac.example.com/eth1": "52:54:00:AB:CD:EF"}},
			template: `{"links": {"ethernets": [
				{"type": "phy", "id": "eth0", "macAddress": {"fromAnnotation": {"object": "baremetalhost", "annotation": "mac.example.com/eth0"}}},
				{"type": "phy", "id": "eth1", "macAddress": {"fromAnnotation": {"object": "BareMetalHost", "annotation": "mac.example.com/eth1"}}}
			]}}`,
			want: `{"links": [
				{"type": "phy", "id": "eth0", "mtu": 1500, "ethernet_mac_address": "52-54-00-12-34-56"},
				{"type": "phy", "id": "eth1", "mtu": 1500, "ethernet_mac_address": "52:54:00:AB:CD:EF"}
			], "networks": [], "services": []}`,
		},
		{
			name: "MAC sources follow CAPM3's order: string, fromHostInterface, fromAnnotation",
			host: Host{Annotations: map[string]string{"mac": "52:54:00:00:00:03"}, NICs: []NIC{{Name: "eno1", MAC: "52:54:00:00:00:02"}}},
			template: `{"links": {"ethernets": [
				{"type": "phy", "id": "a", "macAddress": {"string": "52:54:00:00:00:01", "fromHostInterface": "eno1", "fromAnnotation": {"object": "machine", "annotation": "mac"}}},
				{"type": "phy", "id": "b", "macAddress": {"fromHostInterface": "eno1", "fromAnnotation": {"object": "machine", "annotation": "mac"}}},
				{"type": "phy", "id": "c", "macAddress": {"fromAnnotation": {"object": "baremetalhost", "annotation": "mac"}}}
			]}}`,
			want: `{"links": [
				{"type": "phy", "id": "a", "mtu": 1500, "ethernet_mac_address": "52:54:00:00:00:01"},
				{"type": "phy", "id": "b", "mtu": 1500, "ethernet_mac_address": "52:54:00:00:00:02"},
				{"type": "phy", "id": "c", "mtu": 1500, "ethernet_mac_address": "52:54:00:00:00:03"}
			], "networks": [], "services": []}`,
		},
		{
			name: "uninspected host: the only fromHostInterface ethernet takes the boot MAC",
			host: Host{BootMACAddress: "52:54:00:aa:bb:cc"},
			template: `{"links": {
				"ethernets": [
					{"type": "phy", "id": "eth0", "macAddress": {"fromHostInterface": "eno1"}},
					{"type": "phy", "id": "eth1", "macAddress": {"string": "52:54:00:aa:bb:cd", "fromHostInterface": "eno2"}}
				],
				"vlans": [{"id": "v7", "vlanID": 7, "vlanLink": "eth0", "macAddress": {"string": "52:54:00:aa:bb:cc"}}]
			}}`,
			want: `{"links": [
				{"type": "phy", "id": "eth0", "mtu": 1500, "ethernet_mac_address": "52:54:00:aa:bb:cc"},
				{"type": "phy", "id": "eth1", "mtu": 1500, "ethernet_mac_address": "52:54:00:aa:bb:cd"},
				{"type": "vlan", "id": "v7", "mtu": 1500, "vlan_mac_address": "52:54:00:aa:bb:cc", "vlan_id": 7, "vlan_link": "eth0"}
			], "networks": [], "services": []}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nd := template(t, tt.template)
			got, err := Render(nd, tt.host, pools, tt.opts...)
			require.NoError(t, err)
			assert.JSONEq(t, tt.want, string(got))
			requireValidForIronic(t, got)

			plan, err := Compile(nd, tt.host, tt.opts...)
			require.NoError(t, err)
			for _, name := range plan.Pools() {
				assert.Contains(t, pools, name, "Pools returned a pool the case does not use")
			}
		})
	}
}

func TestRenderExactBytes(t *testing.T) {
	got, err := Render(nil, Host{}, nil)
	require.NoError(t, err)
	assert.Equal(t, `{"links":[],"networks":[],"services":[]}`, string(got)) //nolint:testifylint // the exact bytes are the point

	nd := template(t, `{"links": {"ethernets": [{"type": "phy", "id": "eth0", "mtu": 1500, "macAddress": {"string": "52:54:00:12:34:56"}}]},
		"networks": {"ipv4DHCP": [{"id": "prov", "link": "eth0"}]}, "services": {"dns": ["8.8.8.8"]}}`)
	got, err = Render(nd, Host{}, nil)
	require.NoError(t, err)
	assert.Equal(t, `{"links":[{"ethernet_mac_address":"52:54:00:12:34:56","id":"eth0","mtu":1500,"type":"phy"}],`+ //nolint:testifylint // the exact bytes are the point
		`"networks":[{"id":"prov","link":"eth0","network_id":"prov","routes":[],"type":"ipv4_dhcp"}],"services":[{"address":"8.8.8.8","type":"dns"}]}`,
		string(got), "keys are sorted and nothing is HTML-escaped")
	requireValidForIronic(t, got)
}

func TestRenderIsDeterministic(t *testing.T) {
	params := make([]string, 0, 40)
	for _, p := range []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"} {
		params = append(params, `{"name": "p`+p+`", "value": {"k`+p+`": 1, "x": [1, 2], "a": "`+p+`"}}`)
	}
	nd := template(t, `{
		"links": {"ethernets": [{"type": "phy", "id": "eth0", "macAddress": {"fromAnnotation": {"object": "baremetalhost", "annotation": "m"}}}],
			"bonds": [{"id": "bond0", "bondMode": "802.3ad", "bondLinks": ["eth0"], "macAddress": {"fromAnnotation": {"object": "baremetalhost", "annotation": "m"}},
				"parameters": [`+strings.Join(params, ",")+`]}]},
		"networks": {"ipv4": [{"id": "n4", "link": "bond0", "ipAddressFromIPPool": "v4", "routes": [{"network": "10.0.0.0", "prefix": 8, "gateway": {"fromIPPool": "abc"}, "services": {"dnsFromIPPool": "v4"}}]}],
			"ipv6": [{"id": "n6", "link": "bond0", "fromPoolAnnotation": {"object": "baremetalhost", "annotation": "p6"}}]},
		"services": {"dns": ["9.9.9.9"], "dnsFromIPPool": "v6"}
	}`)
	bondParams := WithBondParameters(map[string]map[string]intstr.IntOrString{"bond0": {
		"miimon": intstr.FromInt32(100), "lacp_rate": intstr.FromString("fast"), "updelay": intstr.FromInt32(200), "downdelay": intstr.FromInt32(200),
	}})
	host := Host{Annotations: map[string]string{"m": "52:54:00:12:34:56", "p6": "v6", "x": "y", "z": "w"}}
	first, err := Render(nd, host, pools, bondParams)
	require.NoError(t, err)
	requireValidForIronic(t, first)
	for range 50 {
		again, err := Render(nd, host, pools, bondParams)
		require.NoError(t, err)
		require.True(t, bytes.Equal(first, again), "render output changed between calls:\n%s\n%s", first, again)
	}
}

func TestPools(t *testing.T) {
	tests := []struct {
		name     string
		template string
		host     Host
		want     []string
	}{
		{name: "nil network data", want: []string{}},
		{name: "no pools", template: `{"links": {"ethernets": [` + eth0 + `]}, "services": {"dns": ["8.8.8.8"]}}`, want: []string{}},
		{
			name: "every kind of reference, sorted and de-duplicated",
			host: Host{Annotations: map[string]string{"addr": "pool-ann", "gw": "pool-gw-ann"}},
			template: `{
				"links": {"ethernets": [` + eth0 + `]},
				"networks": {
					"ipv4": [
						{"id": "a", "link": "eth0", "ipAddressFromIPPool": "pool-b", "routes": [
							{"network": "10.0.0.0", "prefix": 8, "gateway": {"fromIPPool": "pool-gw"}, "services": {"dnsFromIPPool": "pool-route-dns"}},
							{"network": "10.1.0.0", "prefix": 16, "gateway": {"fromPoolRef": {"name": "pool-gw-ref", "apiGroup": "ipam.metal3.io", "kind": "IPPool"}}},
							{"network": "10.2.0.0", "prefix": 16, "gateway": {"fromPoolAnnotation": {"object": "baremetalhost", "annotation": "gw"}}},
							{"network": "10.3.0.0", "prefix": 16, "gateway": {"string": "10.3.0.1", "fromIPPool": "unused-because-string-wins"}}
						]},
						{"id": "b", "link": "eth0", "fromPoolRef": {"name": "pool-a"}, "ipAddressFromIPPool": "unused-because-ref-wins"},
						{"id": "c", "link": "eth0", "fromPoolAnnotation": {"object": "baremetalhost", "annotation": "addr"}, "ipAddressFromIPPool": "unused-because-annotation-wins"}
					],
					"ipv6": [{"id": "d", "link": "eth0", "ipAddressFromIPPool": "pool-b"}],
					"ipv4DHCP": [{"id": "e", "link": "eth0", "routes": [{"network": "0.0.0.0", "gateway": {"fromPoolRef": {"name": "pool-dhcp4"}}}]}],
					"ipv6DHCP": [{"id": "f", "link": "eth0", "routes": [{"network": "::", "gateway": {"fromIPPool": "pool-dhcp6"}, "services": {"dnsFromIPPool": "pool-b"}}]}],
					"ipv6SLAAC": [{"id": "g", "link": "eth0", "routes": [{"network": "::", "gateway": {"fromPoolRef": {"name": "pool-slaac"}}}]}]
				},
				"services": {"dnsFromIPPool": "pool-dns"}
			}`,
			want: []string{"pool-a", "pool-ann", "pool-b", "pool-dhcp4", "pool-dhcp6", "pool-dns", "pool-gw", "pool-gw-ann", "pool-gw-ref", "pool-route-dns", "pool-slaac"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plan, err := Compile(template(t, tt.template), tt.host)
			require.NoError(t, err)
			assert.Equal(t, tt.want, plan.Pools())
		})
	}
}

// Cluster API IPAM pools are claimed apart from Metal3 IPPools (an
// IPAddressClaim, not an IPClaim), and their addresses render as a Metal3
// pool's do: Render keys both by pool name.
func TestClusterAPIPools(t *testing.T) {
	inCluster := func(name string) string {
		return `{"name": "` + name + `", "apiGroup": "ipam.cluster.x-k8s.io", "kind": "InClusterIPPool"}`
	}
	nd := template(t, `{"links": {"ethernets": [`+eth0+`]}, "networks": {
		"ipv4": [{"id": "a", "link": "eth0", "fromPoolRef": `+inCluster("capi-v4")+`,
			"routes": [{"network": "0.0.0.0", "gateway": {"fromPoolRef": `+inCluster("capi-gw")+`}, "services": {"dnsFromIPPool": "v4"}}]}],
		"ipv6": [{"id": "b", "link": "eth0", "fromPoolRef": {"name": "v6"}}]}}`)
	plan, err := Compile(nd, Host{})
	require.NoError(t, err)
	assert.Equal(t, []string{"v4", "v6"}, plan.Pools())
	assert.Equal(t, []Pool{
		{Name: "capi-gw", APIGroup: "ipam.cluster.x-k8s.io", Kind: "InClusterIPPool"},
		{Name: "capi-v4", APIGroup: "ipam.cluster.x-k8s.io", Kind: "InClusterIPPool"},
	}, plan.ClusterAPIPools())

	_, err = plan.Render(map[string]Address{"v4": pools["v4"], "v6": pools["v6"], "capi-v4": pools["abc"]})
	require.ErrorIs(t, err, ErrMissingAddress, "the gateway's Cluster API pool has no address")
	got, err := plan.Render(map[string]Address{"v4": pools["v4"], "v6": pools["v6"], "capi-v4": pools["abc"], "capi-gw": pools["v4"]})
	require.NoError(t, err)
	asMetal3 := template(t, `{"links": {"ethernets": [`+eth0+`]}, "networks": {
		"ipv4": [{"id": "a", "link": "eth0", "ipAddressFromIPPool": "abc",
			"routes": [{"network": "0.0.0.0", "gateway": {"fromIPPool": "v4"}, "services": {"dnsFromIPPool": "v4"}}]}],
		"ipv6": [{"id": "b", "link": "eth0", "fromPoolRef": {"name": "v6"}}]}}`)
	want, err := Render(asMetal3, Host{}, pools)
	require.NoError(t, err)
	assert.JSONEq(t, string(want), string(got))
}

// Each case breaks one thing; Compile and Render must both refuse it with
// an InputError on the given field whose message names the problem and fix.
func TestInputErrors(t *testing.T) {
	net4 := func(extra string) string {
		return `{"links": {"ethernets": [` + eth0 + `]}, "networks": {"ipv4": [{"id": "n", "link": "eth0", ` + extra + `}]}}`
	}
	route4 := func(route string) string {
		return net4(`"ipAddressFromIPPool": "v4", "routes": [` + route + `]`)
	}
	route6 := func(list, route string) string {
		return `{"links": {"ethernets": [` + eth0 + `]}, "networks": {"` + list + `": [{"id": "n", "link": "eth0", "routes": [` + route + `]}]}}`
	}
	bond := func(extra string) string {
		return `{"links": {"ethernets": [` + eth0 + `], "bonds": [{"id": "bond0", "bondMode": "802.3ad", "bondLinks": ["eth0"], "macAddress": ` + mac1 + extra + `}]}}`
	}
	bondParams := func(params map[string]map[string]intstr.IntOrString) []Option {
		return []Option{WithBondParameters(params)}
	}
	annotatedGateway := `{"network": "10.0.0.0", "prefix": 8, "gateway": {"fromPoolAnnotation": {"object": "baremetalhost", "annotation": "gw"}}}`
	tests := []struct {
		name     string
		template string
		nd       *capm3.NetworkData // when the case cannot be written as JSON
		host     Host
		opts     []Option
		field    string
		contains []string
	}{
		// MAC sources.
		{
			name:     "MAC string is not a MAC",
			template: `{"links": {"ethernets": [{"type": "phy", "id": "eth0", "macAddress": {"string": "12:34:56:78:9A"}}]}}`,
			field:    "spec.networkData.links.ethernets[id=eth0].macAddress.string",
			contains: []string{`"12:34:56:78:9A" is not a MAC address`},
		},
		{
			name:     "macAddress without a source",
			template: `{"links": {"ethernets": [` + eth0 + `], "bonds": [{"id": "bond0", "bondMode": "802.3ad", "bondLinks": ["eth0"], "macAddress": {}}]}}`,
			field:    "spec.networkData.links.bonds[id=bond0].macAddress",
			contains: []string{"has no source", "set string, fromHostInterface or fromAnnotation"},
		},
		{
			name:     "MAC from a Machine annotation",
			template: `{"links": {"ethernets": [{"type": "phy", "id": "eth0", "macAddress": {"fromAnnotation": {"object": "machine", "annotation": "mac"}}}]}}`,
			field:    "spec.networkData.links.ethernets[id=eth0].macAddress.fromAnnotation.object",
			contains: []string{`"machine" does not exist before provisioning`, "baremetalhost", "macAddress.string"},
		},
		{
			name: "MAC from a Metal3Machine annotation",
			template: `{"links": {"vlans": [{"id": "v1", "vlanID": 1, "vlanLink": "v2", "macAddress": {"fromAnnotation": {"object": "Metal3Machine", "annotation": "mac"}}},
				{"id": "v2", "vlanID": 2, "vlanLink": "v1", "macAddress": ` + mac1 + `}]}}`,
			field:    "spec.networkData.links.vlans[id=v1].macAddress.fromAnnotation.object",
			contains: []string{`"Metal3Machine" does not exist before provisioning`},
		},
		{
			name:     "MAC from an annotation of an unknown object",
			template: `{"links": {"ethernets": [{"type": "phy", "id": "eth0", "macAddress": {"fromAnnotation": {"object": "cluster", "annotation": "mac"}}}]}}`,
			field:    "spec.networkData.links.ethernets[id=eth0].macAddress.fromAnnotation.object",
			contains: []string{`unknown object "cluster"`, "baremetalhost"},
		},
		{
			name:     "MAC annotation missing on the BareMetalHost",
			host:     Host{Annotations: map[string]string{"other": "52:54:00:12:34:56"}},
			template: `{"links": {"ethernets": [{"type": "phy", "id": "eth0", "macAddress": {"fromAnnotation": {"object": "baremetalhost", "annotation": "mac.example.com/eth0"}}}]}}`,
			field:    "spec.networkData.links.ethernets[id=eth0].macAddress.fromAnnotation.annotation",
			contains: []string{`annotation "mac.example.com/eth0" is missing or empty`},
		},
		{
			name:     "MAC annotation malformed",
			host:     Host{Annotations: map[string]string{"mac": "XX:XX:XX:XX:XX:XX\nsecond line"}},
			template: `{"links": {"ethernets": [{"type": "phy", "id": "eth0", "macAddress": {"fromAnnotation": {"object": "baremetalhost", "annotation": "mac"}}}]}}`,
			field:    "spec.networkData.links.ethernets[id=eth0].macAddress.fromAnnotation.annotation",
			contains: []string{`annotation "mac" holds "XX:XX:XX:XX:XX:XX\nsecond line", which is not a MAC address`},
		},
		{
			name:     "host interface not among the NICs (names are case-sensitive)",
			host:     Host{NICs: []NIC{{Name: "ENO1", MAC: "52:54:00:12:34:56"}, {Name: "eno2", MAC: "52:54:00:12:34:57"}}},
			template: `{"links": {"ethernets": [{"type": "phy", "id": "eth0", "macAddress": {"fromHostInterface": "eno1"}}]}}`,
			field:    "spec.networkData.links.ethernets[id=eth0].macAddress.fromHostInterface",
			contains: []string{`no NIC named "eno1" (it has "ENO1", "eno2")`},
		},
		{
			name:     "host NIC reports a malformed MAC",
			host:     Host{NICs: []NIC{{Name: "eno1", MAC: "bad"}}},
			template: `{"links": {"ethernets": [{"type": "phy", "id": "eth0", "macAddress": {"fromHostInterface": "eno1"}}]}}`,
			field:    "spec.networkData.links.ethernets[id=eth0].macAddress.fromHostInterface",
			contains: []string{`NIC "eno1" reports MAC "bad"`},
		},
		{
			name: "uninspected host, two ethernets use fromHostInterface",
			host: Host{BootMACAddress: "52:54:00:12:34:56"},
			template: `{"links": {"ethernets": [{"type": "phy", "id": "eth0", "macAddress": {"fromHostInterface": "eno1"}},
				{"type": "phy", "id": "eth1", "macAddress": {"fromHostInterface": "eno2"}}]}}`,
			field:    "spec.networkData.links.ethernets[id=eth0].macAddress.fromHostInterface",
			contains: []string{"not inspected yet", `interface "eno1"`, "links.ethernets[id=eth0], links.ethernets[id=eth1]", "macAddress.string or macAddress.fromAnnotation with object baremetalhost"},
		},
		{
			name: "uninspected host, only a bond uses fromHostInterface",
			host: Host{BootMACAddress: "52:54:00:12:34:56"},
			template: `{"links": {"ethernets": [` + eth0 + `],
				"bonds": [{"id": "bond0", "bondMode": "802.3ad", "bondLinks": ["eth0"], "macAddress": {"fromHostInterface": "bond0"}}]}}`,
			field:    "spec.networkData.links.bonds[id=bond0].macAddress.fromHostInterface",
			contains: []string{"exactly one link uses fromHostInterface and it is an ethernet", "links.bonds[id=bond0]"},
		},
		{
			name: "uninspected host, an ethernet and a vlan use fromHostInterface",
			host: Host{BootMACAddress: "52:54:00:12:34:56"},
			template: `{"links": {"ethernets": [{"type": "phy", "id": "eth0", "macAddress": {"fromHostInterface": "eno1"}}],
				"vlans": [{"id": "v3", "vlanID": 3, "vlanLink": "eth0", "macAddress": {"fromHostInterface": "eno1"}}]}}`,
			field:    "spec.networkData.links.ethernets[id=eth0].macAddress.fromHostInterface",
			contains: []string{"links.ethernets[id=eth0], links.vlans[id=v3]"},
		},
		{
			name:     "uninspected host without bootMACAddress",
			template: `{"links": {"ethernets": [{"type": "phy", "id": "eth0", "macAddress": {"fromHostInterface": "eno1"}}]}}`,
			field:    "spec.networkData.links.ethernets[id=eth0].macAddress.fromHostInterface",
			contains: []string{"has no spec.bootMACAddress", "set spec.bootMACAddress"},
		},
		{
			name:     "uninspected host with a malformed bootMACAddress",
			host:     Host{BootMACAddress: "52:54:00:12:34"},
			template: `{"links": {"ethernets": [{"type": "phy", "id": "eth0", "macAddress": {"fromHostInterface": "eno1"}}]}}`,
			field:    "spec.networkData.links.ethernets[id=eth0].macAddress.fromHostInterface",
			contains: []string{`spec.bootMACAddress "52:54:00:12:34"`, "is not a MAC address"},
		},
		// What Ironic's network_data schema requires of links, where CAPM3
		// would render what Ironic refuses.
		{
			name:     "ethernet without macAddress",
			template: `{"links": {"ethernets": [{"type": "phy", "id": "eth0"}]}}`,
			field:    "spec.networkData.links.ethernets[id=eth0].macAddress",
			contains: []string{"is not set", "Ironic's network_data schema requires ethernet_mac_address on every ethernet", "set string, fromHostInterface or fromAnnotation"},
		},
		{
			name:     "bond without macAddress",
			template: `{"links": {"ethernets": [` + eth0 + `], "bonds": [{"id": "bond0", "bondMode": "802.3ad", "bondLinks": ["eth0"]}]}}`,
			field:    "spec.networkData.links.bonds[id=bond0].macAddress",
			contains: []string{"requires ethernet_mac_address on every bond"},
		},
		{
			name:     "vlan without macAddress",
			template: `{"links": {"ethernets": [` + eth0 + `], "vlans": [{"id": "v1", "vlanID": 1, "vlanLink": "eth0"}]}}`,
			field:    "spec.networkData.links.vlans[id=v1].macAddress",
			contains: []string{"requires vlan_mac_address on every vlan"},
		},
		{
			name:     "bond without members",
			template: `{"links": {"bonds": [{"id": "bond0", "bondMode": "active-backup", "macAddress": ` + mac1 + `}]}}`,
			field:    "spec.networkData.links.bonds[id=bond0].bondLinks",
			contains: []string{"is empty", "requires bond_links", "list the ids of the bond's member links"},
		},
		{
			name:     "bond mode Ironic 21.4 spells but CAPM3 and Linux do not",
			template: `{"links": {"ethernets": [` + eth0 + `], "bonds": [{"id": "bond0", "bondMode": "802.1ad", "bondLinks": ["eth0"], "macAddress": ` + mac1 + `}]}}`,
			field:    "spec.networkData.links.bonds[id=bond0].bondMode",
			contains: []string{`"802.1ad" is not a bond mode`, "802.3ad"},
		},
		{
			name:     "bond without a mode",
			template: `{"links": {"ethernets": [` + eth0 + `], "bonds": [{"id": "bond0", "bondLinks": ["eth0"], "macAddress": ` + mac1 + `}]}}`,
			field:    "spec.networkData.links.bonds[id=bond0].bondMode",
			contains: []string{"is not set", "balance-rr, active-backup"},
		},
		{
			name:     "ethernet of a type Ironic does not know",
			template: `{"links": {"ethernets": [{"type": "ethernet", "id": "eth0", "macAddress": ` + mac1 + `}]}}`,
			field:    "spec.networkData.links.ethernets[id=eth0].type",
			contains: []string{`"ethernet" is not an ethernet link type`, "phy"},
		},
		{
			name: "unset mtu, which the API server would have made 1500",
			nd: &capm3.NetworkData{Links: &capm3.NetworkDataLink{Ethernets: []capm3.NetworkDataLinkEthernet{{
				Type: "phy", Id: "eth0", MACAddress: &capm3.NetworkLinkEthernetMac{String: "52:54:00:00:00:01"},
			}}}},
			field:    "spec.networkData.links.ethernets[id=eth0].mtu",
			contains: []string{"0 is outside 1280-9000", "set mtu, e.g. 1500"},
		},
		{
			name:     "mtu above CAPM3's range",
			template: `{"links": {"ethernets": [` + eth0 + `], "vlans": [{"id": "v1", "vlanID": 1, "vlanLink": "eth0", "mtu": 9216, "macAddress": ` + mac1 + `}]}}`,
			field:    "spec.networkData.links.vlans[id=v1].mtu",
			contains: []string{"9216 is outside 1280-9000"},
		},
		// Address, gateway and DNS sources.
		{
			name:     "network address from a pool of an API group that is no IPAM",
			template: net4(`"fromPoolRef": {"name": "p", "apiGroup": "ipam.example.com", "kind": "ExamplePool"}`),
			field:    "spec.networkData.networks.ipv4[id=n].fromPoolRef",
			contains: []string{`kind "ExamplePool" of apiGroup "ipam.example.com"`, "Metal3 IPAM (apiGroup ipam.metal3.io, kind IPPool)", "Cluster API IPAM provider (apiGroup ipam.cluster.x-k8s.io"},
		},
		{
			name:     "network address from another kind in the Metal3 group",
			template: net4(`"fromPoolRef": {"name": "p", "kind": "GlobalIPPool"}`),
			field:    "spec.networkData.networks.ipv4[id=n].fromPoolRef",
			contains: []string{`kind "GlobalIPPool" of apiGroup "ipam.metal3.io"`, "has no such kind", "refer to an IPPool"},
		},
		{
			// The in-cluster provider's prefix pools delegate prefixes.
			name:     "network address from a Cluster API IPAM prefix pool",
			template: net4(`"fromPoolRef": {"name": "p", "apiGroup": "ipam.cluster.x-k8s.io", "kind": "InClusterPrefixPool"}`),
			field:    "spec.networkData.networks.ipv4[id=n].fromPoolRef",
			contains: []string{`kind "InClusterPrefixPool" of apiGroup ipam.cluster.x-k8s.io, a pool of delegated prefixes`, "not the address of a host", "such as InClusterIPPool or GlobalInClusterIPPool"},
		},
		{
			name:     "route gateway from a cluster-wide Cluster API IPAM prefix pool",
			template: route4(`{"network": "10.0.0.0", "prefix": 8, "gateway": {"fromPoolRef": {"name": "gw", "apiGroup": "ipam.cluster.x-k8s.io", "kind": "GlobalInClusterPrefixPool"}}}`),
			field:    "spec.networkData.networks.ipv4[id=n].routes[0].gateway.fromPoolRef",
			contains: []string{`kind "GlobalInClusterPrefixPool"`, "a pool of delegated prefixes"},
		},
		{
			name:     "network address from another provider's prefix pool",
			template: net4(`"fromPoolRef": {"name": "p", "apiGroup": "ipam.cluster.x-k8s.io", "kind": "ExamplePrefixPool"}`),
			field:    "spec.networkData.networks.ipv4[id=n].fromPoolRef",
			contains: []string{`kind "ExamplePrefixPool"`, "a pool of delegated prefixes"},
		},
		{
			// CAPM3's poolRefs.addRef: addresses are keyed by pool name.
			name:     "route gateway from a Cluster API IPAM pool named like the network's Metal3 IPPool",
			template: route4(`{"network": "10.0.0.0", "prefix": 8, "gateway": {"fromPoolRef": {"name": "v4", "apiGroup": "ipam.cluster.x-k8s.io", "kind": "InClusterIPPool"}}}`),
			field:    "spec.networkData.networks.ipv4[id=n].routes[0].gateway.fromPoolRef",
			contains: []string{`refers to InClusterIPPool "v4" of apiGroup ipam.cluster.x-k8s.io`, `also takes addresses from IPPool "v4" of apiGroup ipam.metal3.io`, "rename one of them"},
		},
		{
			name:     "network address pool from a Machine annotation",
			template: net4(`"fromPoolAnnotation": {"object": "machine", "annotation": "pool"}`),
			field:    "spec.networkData.networks.ipv4[id=n].fromPoolAnnotation.object",
			contains: []string{"does not exist before provisioning", "ipAddressFromIPPool or fromPoolRef"},
		},
		{
			name:     "route gateway pool from a Metal3Machine annotation",
			template: route4(`{"network": "10.0.0.0", "prefix": 8, "gateway": {"fromPoolAnnotation": {"object": "metal3machine", "annotation": "pool"}}}`),
			field:    "spec.networkData.networks.ipv4[id=n].routes[0].gateway.fromPoolAnnotation.object",
			contains: []string{"does not exist before provisioning", "string, fromIPPool or fromPoolRef"},
		},
		{
			name:     "network address pool annotation missing",
			template: net4(`"fromPoolAnnotation": {"object": "baremetalhost", "annotation": "ippool.example.com/prov"}`),
			field:    "spec.networkData.networks.ipv4[id=n].fromPoolAnnotation.annotation",
			contains: []string{`annotation "ippool.example.com/prov" is missing or empty`, "name of a Metal3 IPPool"},
		},
		{
			name:     "static network without an address source",
			template: net4(`"routes": []`),
			field:    "spec.networkData.networks.ipv4[id=n]",
			contains: []string{"has no address source"},
		},
		// CAPM3 claims no pool for a gateway annotation on these networks.
		{
			name:     "route gateway from an annotation on an ipv4DHCP network",
			host:     Host{Annotations: map[string]string{"gw": "v4"}},
			template: route6("ipv4DHCP", annotatedGateway),
			field:    "spec.networkData.networks.ipv4DHCP[id=n].routes[0].gateway.fromPoolAnnotation",
			contains: []string{"is not supported on a route of an ipv4DHCP network", "CAPM3 claims no address from that pool there", "fails at provisioning", "use fromIPPool, fromPoolRef or string"},
		},
		{
			name:     "route gateway from an annotation on an ipv6DHCP network",
			host:     Host{Annotations: map[string]string{"gw": "v6"}},
			template: route6("ipv6DHCP", `{"network": "::", "gateway": {"fromPoolAnnotation": {"object": "baremetalhost", "annotation": "gw"}, "fromIPPool": "v6"}}`),
			field:    "spec.networkData.networks.ipv6DHCP[id=n].routes[0].gateway.fromPoolAnnotation",
			contains: []string{"on a route of an ipv6DHCP network"},
		},
		{
			name:     "route gateway from an annotation on an ipv6SLAAC network",
			host:     Host{Annotations: map[string]string{"gw": "v6"}},
			template: route6("ipv6SLAAC", `{"network": "::", "gateway": {"fromPoolAnnotation": {"object": "baremetalhost", "annotation": "gw"}}}`),
			field:    "spec.networkData.networks.ipv6SLAAC[id=n].routes[0].gateway.fromPoolAnnotation",
			contains: []string{"on a route of an ipv6SLAAC network"},
		},
		// What Ironic's network_data schema requires of routes and DNS.
		{
			name:     "route without a gateway",
			template: route4(`{"network": "0.0.0.0", "prefix": 0, "gateway": {}}`),
			field:    "spec.networkData.networks.ipv4[id=n].routes[0].gateway",
			contains: []string{"has no source", "set string, fromIPPool or fromPoolRef", "requires a gateway on every route"},
		},
		{
			name:     "route without a network",
			template: route4(`{"gateway": {"string": "192.168.0.1"}}`),
			field:    "spec.networkData.networks.ipv4[id=n].routes[0].network",
			contains: []string{`"" is not an IPv4 address`},
		},
		{
			name:     "IPv4 host route",
			template: route4(`{"network": "10.0.0.1", "prefix": 32, "gateway": {"string": "192.168.0.1"}}`),
			field:    "spec.networkData.networks.ipv4[id=n].routes[0].prefix",
			contains: []string{"32 renders netmask 255.255.255.255, which Ironic's network_data schema refuses", "use a shorter prefix or drop the route"},
		},
		{
			name:     "route prefix too long for IPv4",
			template: route4(`{"network": "10.0.0.0", "prefix": 33, "gateway": {"string": "192.168.0.1"}}`),
			field:    "spec.networkData.networks.ipv4[id=n].routes[0].prefix",
			contains: []string{"33 is not a valid IPv4 prefix length", "0-32"},
		},
		{
			name:     "IPv6 gateway on an IPv4 route",
			template: route4(`{"network": "10.0.0.0", "prefix": 8, "gateway": {"string": "2001:db8::1"}}`),
			field:    "spec.networkData.networks.ipv4[id=n].routes[0].gateway.string",
			contains: []string{`"2001:db8::1" is not an IPv4 address`, "write it like 192.0.2.1"},
		},
		{
			name:     "IPv4 DNS server on an IPv6 route",
			template: route6("ipv6DHCP", `{"network": "::", "gateway": {"string": "2001:db8::1"}, "services": {"dns": ["2001:db8::53", "192.0.2.53"]}}`),
			field:    "spec.networkData.networks.ipv6DHCP[id=n].routes[0].services.dns[1]",
			contains: []string{`"192.0.2.53" is not an IPv6 address`},
		},
		{
			name:     "IPv6 route destination with a dotted IPv4 tail",
			template: route6("ipv6SLAAC", `{"network": "64:ff9b::192.0.2.0", "prefix": 120, "gateway": {"string": "2001:db8::1"}}`),
			field:    "spec.networkData.networks.ipv6SLAAC[id=n].routes[0].network",
			contains: []string{"dotted IPv4 part", `"0064:ff9b:0000:0000:0000:0000:c000:0200"`},
		},
		{
			name:     "top-level DNS server that is a name",
			template: `{"services": {"dns": ["192.0.2.53", "dns.example.com"]}}`,
			field:    "spec.networkData.services.dns[1]",
			contains: []string{`"dns.example.com" is not an IP address`},
		},
		// Structure.
		{
			name:     "network on an undefined link",
			template: `{"links": {"ethernets": [` + eth0 + `]}, "networks": {"ipv4DHCP": [{"id": "n", "link": "eth9"}]}}`,
			field:    "spec.networkData.networks.ipv4DHCP[id=n].link",
			contains: []string{`link "eth9" is not defined`},
		},
		{
			name:     "network without a link",
			template: `{"networks": {"ipv6SLAAC": [{"id": "n"}]}}`,
			field:    "spec.networkData.networks.ipv6SLAAC[id=n].link",
			contains: []string{"is empty", "id of a link"},
		},
		{
			name:     "bond over an undefined link",
			template: `{"links": {"ethernets": [` + eth0 + `], "bonds": [{"id": "bond0", "bondMode": "802.3ad", "bondLinks": ["eth0", "eth1"], "macAddress": ` + mac1 + `}]}}`,
			field:    "spec.networkData.links.bonds[id=bond0].bondLinks[1]",
			contains: []string{`link "eth1" is not defined`},
		},
		{
			name:     "vlan on an undefined link",
			template: `{"links": {"vlans": [{"id": "v1", "vlanID": 1, "vlanLink": "bond0", "macAddress": ` + mac1 + `}]}}`,
			field:    "spec.networkData.links.vlans[id=v1].vlanLink",
			contains: []string{`link "bond0" is not defined`},
		},
		{
			name:     "vlan on itself",
			template: `{"links": {"vlans": [{"id": "v1", "vlanID": 1, "vlanLink": "v1", "macAddress": ` + mac1 + `}]}}`,
			field:    "spec.networkData.links.vlans[id=v1].vlanLink",
			contains: []string{"refers to itself"},
		},
		{
			name:     "vlan without vlanID",
			template: `{"links": {"ethernets": [` + eth0 + `], "vlans": [{"id": "v1", "vlanLink": "eth0", "macAddress": ` + mac1 + `}]}}`,
			field:    "spec.networkData.links.vlans[id=v1].vlanID",
			contains: []string{"is not set"},
		},
		{
			name:     "duplicate link id across link types",
			template: `{"links": {"ethernets": [` + eth0 + `], "vlans": [{"id": "eth0", "vlanID": 1, "vlanLink": "eth0", "macAddress": ` + mac1 + `}]}}`,
			field:    "spec.networkData.links.vlans[id=eth0].id",
			contains: []string{`link id "eth0" is also used by spec.networkData.links.ethernets[id=eth0]`},
		},
		{
			name:     "empty link id",
			template: `{"links": {"ethernets": [` + eth0 + `, {"type": "phy", "macAddress": ` + mac1 + `}]}}`,
			field:    "spec.networkData.links.ethernets[1].id",
			contains: []string{"is empty"},
		},
		{
			name: "duplicate network id across network types",
			template: `{"links": {"ethernets": [` + eth0 + `]}, "networks": {"ipv4": [{"id": "n", "link": "eth0", "ipAddressFromIPPool": "v4"}],
				"ipv4DHCP": [{"id": "n", "link": "eth0"}]}}`,
			field:    "spec.networkData.networks.ipv4DHCP[id=n].id",
			contains: []string{`network id "n" is also used by spec.networkData.networks.ipv4[id=n]`},
		},
		{
			name:     "empty network id",
			template: `{"links": {"ethernets": [` + eth0 + `]}, "networks": {"ipv6DHCP": [{"link": "eth0"}]}}`,
			field:    "spec.networkData.networks.ipv6DHCP[0].id",
			contains: []string{"is empty"},
		},
		// CAPM3's bond parameters.
		{
			name: "bond parameters overwriting structured keys or each other",
			template: bond(`, "parameters": [
				{"name": "mode", "value": "active-backup"}, {"name": "miimon", "value": 100}, {"name": "links", "value": []}, {"name": "miimon", "value": 200}]`),
			field:    "spec.networkData.links.bonds[id=bond0].parameters",
			contains: []string{`"mode", "links", "miimon" would overwrite`},
		},
		{
			name:     "bond parameter without a name",
			template: bond(`, "parameters": [{"value": 1}]`),
			field:    "spec.networkData.links.bonds[id=bond0].parameters",
			contains: []string{"empty name"},
		},
		{
			name: "bond parameter that is not JSON",
			nd: &capm3.NetworkData{Links: &capm3.NetworkDataLink{
				Ethernets: []capm3.NetworkDataLinkEthernet{{Type: "phy", Id: "eth0", MTU: 1500, MACAddress: &capm3.NetworkLinkEthernetMac{String: "52:54:00:00:00:01"}}},
				Bonds: []capm3.NetworkDataLinkBond{{
					Id: "bond0", BondMode: "802.3ad", BondLinks: []string{"eth0"}, MTU: 1500, MACAddress: &capm3.NetworkLinkEthernetMac{String: "52:54:00:00:00:01"},
					Parameters: []capm3.NetworkDataLinkBondParam{{Name: "miimon", Value: apiextensionsv1.JSON{Raw: []byte("{100")}}},
				}},
			}},
			field:    "spec.networkData.links.bonds[id=bond0].parameters[miimon].value",
			contains: []string{"is not valid JSON"},
		},
		// Our scalar bond parameters.
		{
			name:     "bond parameters for a bond that does not exist",
			template: bond(``),
			opts:     bondParams(map[string]map[string]intstr.IntOrString{"bond1": {"miimon": intstr.FromInt32(100)}}),
			field:    "spec.bondParameters[bond1]",
			contains: []string{`names no bond of spec.networkData.links.bonds (it has "bond0")`, "key bondParameters by the id of a bond"},
		},
		{
			name:     "bond parameters without any bond",
			template: `{"links": {"ethernets": [` + eth0 + `]}}`,
			opts:     bondParams(map[string]map[string]intstr.IntOrString{"bond0": {"miimon": intstr.FromInt32(100)}}),
			field:    "spec.bondParameters[bond0]",
			contains: []string{"(it has none)"},
		},
		{
			name:     "bond parameter that a structured field renders",
			template: bond(``),
			opts:     bondParams(map[string]map[string]intstr.IntOrString{"bond0": {"xmit_hash_policy": intstr.FromString("encap3+4")}}),
			field:    "spec.bondParameters[bond0][xmit_hash_policy]",
			contains: []string{"would render bond_xmit_hash_policy, which the bond's bondXmitHashPolicy sets", "set bondXmitHashPolicy on the bond instead"},
		},
		{
			name:     "bond parameter that a CAPM3 parameter renders too",
			template: bond(`, "parameters": [{"name": "miimon", "value": {"ms": 100}}]`),
			opts:     bondParams(map[string]map[string]intstr.IntOrString{"bond0": {"miimon": intstr.FromInt32(100)}}),
			field:    "spec.bondParameters[bond0][miimon]",
			contains: []string{"would render bond_miimon, which spec.networkData.links.bonds[id=bond0].parameters[miimon] renders too",
				"remove that parameter's value (a parameter without one is a placeholder this fills)"},
		},
		{
			name:     "bond parameter named with its bond_ prefix",
			template: bond(``),
			opts:     bondParams(map[string]map[string]intstr.IntOrString{"bond0": {"bond_miimon": intstr.FromInt32(100)}}),
			field:    "spec.bondParameters[bond0][bond_miimon]",
			contains: []string{"starts with bond_, which rendering adds", `write "miimon"`},
		},
		{
			name:     "bond parameter name with a dash",
			template: bond(``),
			opts:     bondParams(map[string]map[string]intstr.IntOrString{"bond0": {"lacp-rate": intstr.FromString("fast")}}),
			field:    "spec.bondParameters[bond0][lacp-rate]",
			contains: []string{`"lacp-rate" is not a bond parameter name`, "lower case with underscores"},
		},
		{
			name:     "negative bond parameter",
			template: bond(``),
			opts:     bondParams(map[string]map[string]intstr.IntOrString{"bond0": {"updelay": intstr.FromInt32(-1)}}),
			field:    "spec.bondParameters[bond0][updelay]",
			contains: []string{"-1 is negative"},
		},
		{
			name:     "bond parameter value that would break glean's BONDING_OPTS line",
			template: bond(``),
			opts:     bondParams(map[string]map[string]intstr.IntOrString{"bond0": {"lacp_rate": intstr.FromString(`fast" miimon="0`)}}),
			field:    "spec.bondParameters[bond0][lacp_rate]",
			contains: []string{`"fast\" miimon=\"0" is not a value the network tools can write`, "a word such as fast"},
		},
		{
			name:     "odd ids are quoted so the message stays one line",
			template: `{"links": {"ethernets": [{"type": "phy", "id": "eth 0\n]", "macAddress": {"string": "nope"}}]}}`,
			field:    `spec.networkData.links.ethernets[id="eth 0\n]"].macAddress.string`,
			contains: []string{`"nope" is not a MAC address`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nd := tt.nd
			if nd == nil {
				nd = template(t, tt.template)
			}
			_, compileErr := Compile(nd, tt.host, tt.opts...)
			_, renderErr := Render(nd, tt.host, pools, tt.opts...)
			for _, err := range []error{compileErr, renderErr} {
				require.Error(t, err)
				assert.True(t, IsInputError(err), "want an input error, got %v", err)
				require.NotErrorIs(t, err, ErrMissingAddress)
				var inputErr *InputError
				require.ErrorAs(t, err, &inputErr)
				assert.Equal(t, tt.field, inputErr.Field)
				for _, s := range tt.contains {
					assert.Contains(t, err.Error(), s)
				}
				assert.NotContains(t, err.Error(), "\n", "messages go into Events and must be one line")
			}
			assert.Equal(t, compileErr.Error(), renderErr.Error(), "Compile and Render must agree")
		})
	}
}

// Problems of the addresses IPAM gives: only Render, which has them, sees
// them. Missing addresses are the caller's bug; the others are input errors
// where the document would not be valid under Ironic's schema.
func TestRenderAddressErrors(t *testing.T) {
	const links = `"links": {"ethernets": [` + eth0 + `]}`
	net := func(list, pool string) string {
		return `{` + links + `, "networks": {"` + list + `": [{"id": "n", "link": "eth0", "ipAddressFromIPPool": "` + pool + `"}]}}`
	}
	route := func(list, route string) string {
		return `{` + links + `, "networks": {"` + list + `": [{"id": "n", "link": "eth0", "routes": [` + route + `]}]}}`
	}
	tests := []struct {
		name      string
		template  string
		addresses map[string]Address
		input     bool
		contains  []string
	}{
		{
			name:      "address pool missing from addresses",
			template:  net("ipv4", "v4"),
			addresses: map[string]Address{},
			contains:  []string{`spec.networkData.networks.ipv4[id=n]: no address was given for pool "v4"`, "Plan.Pools"},
		},
		{
			name:      "gateway pool missing from addresses",
			template:  route("ipv4DHCP", `{"network": "10.0.0.0", "gateway": {"fromIPPool": "gw"}}`),
			addresses: pools,
			contains:  []string{`spec.networkData.networks.ipv4DHCP[id=n].routes[0].gateway: no address was given for pool "gw"`},
		},
		{
			name:      "route DNS pool missing from addresses",
			template:  route("ipv6DHCP", `{"network": "::", "gateway": {"string": "2001:db8::1"}, "services": {"dnsFromIPPool": "dns"}}`),
			addresses: pools,
			contains:  []string{`routes[0].services.dnsFromIPPool: no address was given for pool "dns"`},
		},
		{
			name:      "top-level DNS pool missing from addresses",
			template:  `{"services": {"dnsFromIPPool": "dns"}}`,
			addresses: nil,
			contains:  []string{`spec.networkData.services.dnsFromIPPool: no address was given for pool "dns"`},
		},
		{
			name:      "pool prefix not valid for IPv4",
			template:  net("ipv4", "wide"),
			addresses: map[string]Address{"wide": {IP: "10.0.0.1", Prefix: 64}},
			input:     true,
			contains:  []string{`IPPool "wide" gave prefix 64, which is not a valid IPv4 prefix length (0-32)`},
		},
		{
			name:      "pool prefix not valid for IPv6",
			template:  net("ipv6", "neg"),
			addresses: map[string]Address{"neg": {IP: "2001:db8::1", Prefix: -1}},
			input:     true,
			contains:  []string{"gave prefix -1", "0-128"},
		},
		{
			name:      "pool prefix 32, whose netmask Ironic refuses",
			template:  net("ipv4", "host"),
			addresses: map[string]Address{"host": {IP: "10.0.0.1", Prefix: 32}},
			input:     true,
			contains:  []string{`IPPool "host" gave prefix 32, whose netmask 255.255.255.255 Ironic's network_data schema refuses`, "shorter prefix"},
		},
		{
			name:      "IPv6 address for an IPv4 network",
			template:  net("ipv4", "v6"),
			addresses: pools,
			input:     true,
			contains:  []string{`IPPool "v6" gave address "2001:db8::14", which is not an IPv4 address`, "a pool of the network's family"},
		},
		{
			name:      "IPv6 address with a dotted IPv4 tail",
			template:  net("ipv6", "mapped"),
			addresses: map[string]Address{"mapped": {IP: "::ffff:192.0.2.7", Prefix: 64}},
			input:     true,
			contains:  []string{`IPPool "mapped" gave address "::ffff:192.0.2.7", which writes an IPv6 address with a dotted IPv4 part`},
		},
		{
			name:      "gateway pool without a gateway",
			template:  route("ipv4DHCP", `{"network": "10.0.0.0", "prefix": 8, "gateway": {"fromIPPool": "nogw"}}`),
			addresses: pools,
			input:     true,
			contains:  []string{`routes[0].gateway: IPPool "nogw" has no gateway`, "requires one on every route", "set the pool's spec.gateway"},
		},
		{
			name:      "gateway of the other family",
			template:  route("ipv6SLAAC", `{"network": "::", "gateway": {"fromPoolRef": {"name": "v4"}}}`),
			addresses: pools,
			input:     true,
			contains:  []string{`IPPool "v4" gave gateway "192.168.0.1", which is not an IPv6 address`},
		},
		{
			name:      "route DNS servers of the other family",
			template:  route("ipv4DHCP", `{"network": "10.0.0.0", "prefix": 8, "gateway": {"string": "10.0.0.1"}, "services": {"dnsFromIPPool": "v6"}}`),
			addresses: pools,
			input:     true,
			contains:  []string{`routes[0].services.dnsFromIPPool: IPPool "v6" lists DNS server "2001:db8::53", which is not an IPv4 address`, "list only IPv4 DNS servers"},
		},
		{
			name:      "top-level DNS server that is not an address",
			template:  `{"services": {"dnsFromIPPool": "dns"}}`,
			addresses: map[string]Address{"dns": {DNSServers: []string{"192.0.2.53", "resolver.example.com"}}},
			input:     true,
			contains:  []string{`IPPool "dns" lists DNS server "resolver.example.com", which is not an IP address`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nd := template(t, tt.template)
			plan, err := Compile(nd, Host{})
			require.NoError(t, err, "only Render, which has the addresses, can see this problem")

			_, err = plan.Render(tt.addresses)
			require.Error(t, err)
			assert.Equal(t, tt.input, IsInputError(err))
			assert.Equal(t, !tt.input, errors.Is(err, ErrMissingAddress))
			for _, s := range tt.contains {
				assert.Contains(t, err.Error(), s)
			}
		})
	}
}

func TestNetmask(t *testing.T) {
	tests := []struct {
		prefix int
		ipv4   bool
		want   string
		ok     bool
	}{
		{prefix: 24, ipv4: true, want: "255.255.255.0", ok: true},
		{prefix: 16, ipv4: true, want: "255.255.0.0", ok: true},
		{prefix: 0, ipv4: true, want: "0.0.0.0", ok: true},
		{prefix: 32, ipv4: true, want: "255.255.255.255", ok: true},
		{prefix: 23, ipv4: true, want: "255.255.254.0", ok: true},
		{prefix: 64, want: "ffff:ffff:ffff:ffff::", ok: true},
		{prefix: 96, want: "ffff:ffff:ffff:ffff:ffff:ffff::", ok: true},
		{prefix: 0, want: "::", ok: true},
		{prefix: 128, want: "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", ok: true},
		{prefix: 56, want: "ffff:ffff:ffff:ff00::", ok: true},
		{prefix: 33, ipv4: true},
		{prefix: -1, ipv4: true},
		{prefix: 129},
	}
	for _, tt := range tests {
		got, ok := netmask(tt.prefix, tt.ipv4)
		assert.Equal(t, tt.ok, ok, "prefix %d ipv4=%v", tt.prefix, tt.ipv4)
		assert.Equal(t, tt.want, got, "prefix %d ipv4=%v", tt.prefix, tt.ipv4)
	}
}

func TestIsMAC(t *testing.T) {
	for mac, want := range map[string]bool{
		"52:54:00:12:34:56":  true,
		"52-54-00-ab-CD-ef":  true,
		"52:54-00:12-34:56":  true, // CAPM3's pattern allows mixed separators
		"52:54:00:12:34":     false,
		"52:54:00:12:34:5g":  false,
		"525400123456":       false,
		"52.54.00.12.34.56":  false,
		"52:54:00:12:34:56 ": false, //nolint:gocritic // a trailing space is not a MAC
		"":                   false,
	} {
		assert.Equal(t, want, isMAC(mac), mac)
	}
}
