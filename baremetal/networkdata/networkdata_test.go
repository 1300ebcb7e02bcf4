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
)

// template decodes a spec.networkData written as in a Metal3DataTemplate;
// unknown fields fail the test so a typo cannot silently drop a case.
func template(t testing.TB, doc string) *capm3.NetworkData {
	t.Helper()
	if doc == "" {
		return nil
	}
	dec := json.NewDecoder(strings.NewReader(doc))
	dec.DisallowUnknownFields()
	nd := &capm3.NetworkData{}
	require.NoError(t, dec.Decode(nd))
	return nd
}

const emptyDoc = `{"links": [], "networks": [], "services": []}`

// Pools shared by most cases, as Metal3 IPAM would hand them out.
var pools = map[string]Address{
	"v4":     {IP: "192.168.0.14", Prefix: 24, Gateway: "192.168.0.1", DNSServers: []string{"192.168.0.53", "192.168.0.54"}},
	"v6":     {IP: "2001:db8::14", Prefix: 64, Gateway: "2001:db8::1", DNSServers: []string{"2001:db8::53"}},
	"abc":    {IP: "10.1.0.5", Prefix: 16, Gateway: "192.168.2.1", DNSServers: []string{"1.1.1.1"}},
	"abc6":   {IP: "fe80::5", Prefix: 96, Gateway: "fe80::1", DNSServers: []string{"fe80:2001::1111"}},
	"nogw":   {IP: "172.16.0.9", Prefix: 12},
	"ann-v4": {IP: "192.168.10.20", Prefix: 24, Gateway: "192.168.10.1"},
}

func TestRender(t *testing.T) {
	tests := []struct {
		name     string
		template string
		host     Host
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
			// CAPM3 renderNetworkData test "Full example", with the network on a defined link.
			name: "CAPM3 full example",
			template: `{
				"links": {"ethernets": [{"type": "phy", "id": "eth0", "mtu": 1500, "macAddress": {"string": "12:34:56:78:9A:BC"}}]},
				"networks": {"ipv4": [{"id": "abc", "link": "eth0", "ipAddressFromIPPool": "v4",
					"routes": [{"network": "10.0.0.0", "prefix": 16, "gateway": {"string": "192.168.1.1"}, "services": {"dns": ["8.8.8.8"]}}]}]},
				"services": {"dns": ["8.8.8.8", "2001::8888"]}
			}`,
			want: `{
				"links": [{"type": "phy", "id": "eth0", "mtu": 1500, "ethernet_mac_address": "12:34:56:78:9A:BC"}],
				"networks": [{"type": "ipv4", "id": "abc", "link": "eth0", "ip_address": "192.168.0.14", "netmask": "255.255.255.0",
					"routes": [{"network": "10.0.0.0", "netmask": "255.255.0.0", "gateway": "192.168.1.1", "services": [{"type": "dns", "address": "8.8.8.8"}]}]}],
				"services": [{"type": "dns", "address": "8.8.8.8"}, {"type": "dns", "address": "2001::8888"}]
			}`,
		},
		{
			name: "ethernet with name and no MAC omits ethernet_mac_address; unset mtu renders 0",
			template: `{"links": {"ethernets": [
				{"type": "phy", "id": "eth0", "name": "enp1s0", "mtu": 9000},
				{"type": "phy", "id": "eth1"}
			]}}`,
			want: `{"links": [
				{"type": "phy", "id": "eth0", "name": "enp1s0", "mtu": 9000},
				{"type": "phy", "id": "eth1", "mtu": 0}
			], "networks": [], "services": []}`,
		},
		{
			name: "bond with parameters of every JSON type",
			template: `{"links": {
				"ethernets": [{"type": "phy", "id": "eth0"}, {"type": "phy", "id": "eth1"}],
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
				{"type": "phy", "id": "eth0", "mtu": 0},
				{"type": "phy", "id": "eth1", "mtu": 0}
			], "networks": [], "services": []}`,
		},
		{
			// CAPM3 renders unset bondLinks as null and an unset policy as "".
			name:     "bond without MAC, links or policy",
			template: `{"links": {"bonds": [{"id": "bond0", "bondMode": "active-backup", "mtu": 1500}]}}`,
			want: `{"links": [{"type": "bond", "id": "bond0", "mtu": 1500, "bond_mode": "active-backup",
				"bond_xmit_hash_policy": "", "bond_links": null}], "networks": [], "services": []}`,
		},
		{
			name: "vlans with and without MAC",
			template: `{"links": {
				"ethernets": [{"type": "phy", "id": "eth0", "mtu": 1500}],
				"vlans": [
					{"id": "vlan100", "name": "vlan-storage", "vlanID": 100, "vlanLink": "eth0", "mtu": 9000, "macAddress": {"string": "AA:BB:CC:DD:EE:00"}},
					{"id": "vlan0", "vlanID": 0, "vlanLink": "eth0"}
				]
			}}`,
			want: `{"links": [
				{"type": "phy", "id": "eth0", "mtu": 1500},
				{"type": "vlan", "id": "vlan100", "name": "vlan-storage", "mtu": 9000, "vlan_mac_address": "AA:BB:CC:DD:EE:00", "vlan_id": 100, "vlan_link": "eth0"},
				{"type": "vlan", "id": "vlan0", "mtu": 0, "vlan_id": 0, "vlan_link": "eth0"}
			], "networks": [], "services": []}`,
		},
		{
			name: "links render bonds, then ethernets, then vlans",
			template: `{"links": {
				"vlans": [{"id": "vlan200", "vlanID": 200, "vlanLink": "bond0", "mtu": 1500}],
				"ethernets": [{"type": "phy", "id": "eth0", "mtu": 1500}],
				"bonds": [{"id": "bond0", "bondMode": "802.3ad", "mtu": 1500, "bondLinks": ["eth0"]}]
			}}`,
			want: `{"links": [
				{"type": "bond", "id": "bond0", "mtu": 1500, "bond_mode": "802.3ad", "bond_xmit_hash_policy": "", "bond_links": ["eth0"]},
				{"type": "phy", "id": "eth0", "mtu": 1500},
				{"type": "vlan", "id": "vlan200", "mtu": 1500, "vlan_id": 200, "vlan_link": "bond0"}
			], "networks": [], "services": []}`,
		},
		{
			name: "every network type, in CAPM3's order",
			template: `{
				"links": {"ethernets": [{"type": "phy", "id": "eth0", "mtu": 1500}]},
				"networks": {
					"ipv6SLAAC": [{"id": "slaac", "link": "eth0"}],
					"ipv6DHCP": [{"id": "dhcp6", "link": "eth0"}],
					"ipv4DHCP": [{"id": "dhcp4", "link": "eth0"}],
					"ipv6": [{"id": "static6", "link": "eth0", "fromPoolRef": {"name": "v6", "apiGroup": "ipam.metal3.io", "kind": "IPPool"}}],
					"ipv4": [{"id": "static4", "link": "eth0", "fromPoolRef": {"name": "v4"}}]
				}
			}`,
			want: `{"links": [{"type": "phy", "id": "eth0", "mtu": 1500}], "networks": [
				{"type": "ipv4", "id": "static4", "link": "eth0", "ip_address": "192.168.0.14", "netmask": "255.255.255.0", "routes": []},
				{"type": "ipv6", "id": "static6", "link": "eth0", "ip_address": "2001:db8::14", "netmask": "ffff:ffff:ffff:ffff::", "routes": []},
				{"type": "ipv4_dhcp", "id": "dhcp4", "link": "eth0", "routes": []},
				{"type": "ipv6_dhcp", "id": "dhcp6", "link": "eth0", "routes": []},
				{"type": "ipv6_slaac", "id": "slaac", "link": "eth0", "routes": []}
			], "services": []}`,
		},
		{
			// CAPM3 getRoutesv4 test, plus a gateway from a BareMetalHost annotation.
			name: "IPv4 routes with every gateway source",
			host: Host{Annotations: map[string]string{"pool.example.com/gw": "abc"}},
			template: `{
				"links": {"ethernets": [{"type": "phy", "id": "eth0"}]},
				"networks": {"ipv4": [{"id": "net", "link": "eth0", "ipAddressFromIPPool": "v4", "routes": [
					{"network": "192.168.0.0", "prefix": 24, "gateway": {"string": "192.168.1.1"}},
					{"network": "10.0.0.0", "prefix": 16, "gateway": {"fromIPPool": "abc"}, "services": {"dns": ["8.8.8.8", "8.8.4.4"], "dnsFromIPPool": "abc"}},
					{"gateway": {"fromPoolRef": {"name": "abc"}}},
					{"network": "172.16.0.0", "prefix": 12, "gateway": {"fromPoolAnnotation": {"object": "baremetalhost", "annotation": "pool.example.com/gw"}}},
					{"network": "172.17.0.0", "prefix": 32, "gateway": {"fromIPPool": "nogw"}},
					{"network": "0.0.0.0", "prefix": 0, "gateway": {}},
					{"network": "10.9.0.0", "prefix": 16, "gateway": {"string": "10.9.0.1", "fromIPPool": "abc"}}
				]}]}
			}`,
			want: `{"links": [{"type": "phy", "id": "eth0", "mtu": 0}], "networks": [
				{"type": "ipv4", "id": "net", "link": "eth0", "ip_address": "192.168.0.14", "netmask": "255.255.255.0", "routes": [
					{"network": "192.168.0.0", "netmask": "255.255.255.0", "gateway": "192.168.1.1", "services": []},
					{"network": "10.0.0.0", "netmask": "255.255.0.0", "gateway": "192.168.2.1", "services": [
						{"type": "dns", "address": "8.8.8.8"}, {"type": "dns", "address": "8.8.4.4"}, {"type": "dns", "address": "1.1.1.1"}]},
					{"network": "", "netmask": "0.0.0.0", "gateway": "192.168.2.1", "services": []},
					{"network": "172.16.0.0", "netmask": "255.240.0.0", "gateway": "192.168.2.1", "services": []},
					{"network": "172.17.0.0", "netmask": "255.255.255.255", "gateway": "", "services": []},
					{"network": "0.0.0.0", "netmask": "0.0.0.0", "gateway": "", "services": []},
					{"network": "10.9.0.0", "netmask": "255.255.0.0", "gateway": "10.9.0.1", "services": []}
				]}
			], "services": []}`,
		},
		{
			// CAPM3 getRoutesv6 test, on an ipv6 network.
			name: "IPv6 routes with every gateway source and IPv6 netmasks",
			host: Host{Annotations: map[string]string{"pool.example.com/gw6": "abc6"}},
			template: `{
				"links": {"ethernets": [{"type": "phy", "id": "eth0"}]},
				"networks": {"ipv6": [{"id": "net6", "link": "eth0", "ipAddressFromIPPool": "abc6", "routes": [
					{"network": "2001::0", "prefix": 96, "gateway": {"string": "2001::1"}},
					{"network": "fe80::0", "prefix": 64, "gateway": {"fromIPPool": "abc6"}, "services": {"dns": ["fe80:2001::8888", "fe80:2001::8844"], "dnsFromIPPool": "abc6"}},
					{"gateway": {"fromPoolRef": {"name": "abc6", "apiGroup": "ipam.metal3.io"}}},
					{"network": "2001:db8:1::", "prefix": 48, "gateway": {"fromPoolAnnotation": {"object": "BareMetalHost", "annotation": "pool.example.com/gw6"}}},
					{"network": "2001:db8:2::1", "prefix": 128, "gateway": {"string": "2001::1"}},
					{"network": "2001:db8:3::", "prefix": 65, "gateway": {"string": "2001::1"}}
				]}]}
			}`,
			want: `{"links": [{"type": "phy", "id": "eth0", "mtu": 0}], "networks": [
				{"type": "ipv6", "id": "net6", "link": "eth0", "ip_address": "fe80::5", "netmask": "ffff:ffff:ffff:ffff:ffff:ffff::", "routes": [
					{"network": "2001::0", "netmask": "ffff:ffff:ffff:ffff:ffff:ffff::", "gateway": "2001::1", "services": []},
					{"network": "fe80::0", "netmask": "ffff:ffff:ffff:ffff::", "gateway": "fe80::1", "services": [
						{"type": "dns", "address": "fe80:2001::8888"}, {"type": "dns", "address": "fe80:2001::8844"}, {"type": "dns", "address": "fe80:2001::1111"}]},
					{"network": "", "netmask": "::", "gateway": "fe80::1", "services": []},
					{"network": "2001:db8:1::", "netmask": "ffff:ffff:ffff::", "gateway": "fe80::1", "services": []},
					{"network": "2001:db8:2::1", "netmask": "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "gateway": "2001::1", "services": []},
					{"network": "2001:db8:3::", "netmask": "ffff:ffff:ffff:ffff:8000::", "gateway": "2001::1", "services": []}
				]}
			], "services": []}`,
		},
		{
			name: "DHCP and SLAAC networks carry routes with pool gateways and DNS",
			host: Host{Annotations: map[string]string{"gw": "ann-v4"}},
			template: `{
				"links": {"ethernets": [{"type": "phy", "id": "eth0"}]},
				"networks": {
					"ipv4DHCP": [{"id": "d4", "link": "eth0", "routes": [
						{"network": "10.0.0.0", "prefix": 8, "gateway": {"fromPoolAnnotation": {"object": "baremetalhost", "annotation": "gw"}}, "services": {"dnsFromIPPool": "v4"}}]}],
					"ipv6DHCP": [{"id": "d6", "link": "eth0", "routes": [
						{"network": "2001:db8::", "prefix": 32, "gateway": {"fromPoolRef": {"name": "v6"}}}]}],
					"ipv6SLAAC": [{"id": "s6", "link": "eth0", "routes": [
						{"network": "::", "prefix": 0, "gateway": {"fromIPPool": "v6"}, "services": {"dns": ["2001:4860:4860::8888"]}}]}]
				}
			}`,
			want: `{"links": [{"type": "phy", "id": "eth0", "mtu": 0}], "networks": [
				{"type": "ipv4_dhcp", "id": "d4", "link": "eth0", "routes": [
					{"network": "10.0.0.0", "netmask": "255.0.0.0", "gateway": "192.168.10.1", "services": [
						{"type": "dns", "address": "192.168.0.53"}, {"type": "dns", "address": "192.168.0.54"}]}]},
				{"type": "ipv6_dhcp", "id": "d6", "link": "eth0", "routes": [
					{"network": "2001:db8::", "netmask": "ffff:ffff::", "gateway": "2001:db8::1", "services": []}]},
				{"type": "ipv6_slaac", "id": "s6", "link": "eth0", "routes": [
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
				"links": {"ethernets": [{"type": "phy", "id": "eth0"}]},
				"networks": {"ipv4": [{"id": "net1", "link": "eth0", "ipAddressFromIPPool": "v4", "fromPoolRef": {"name": "abc"},
					"fromPoolAnnotation": {"object": "baremetalhost", "annotation": "ippool.metal3.io/test-network"}}]}
			}`,
			want: `{"links": [{"type": "phy", "id": "eth0", "mtu": 0}], "networks": [
				{"type": "ipv4", "id": "net1", "link": "eth0", "ip_address": "192.168.10.20", "netmask": "255.255.255.0", "routes": []}
			], "services": []}`,
		},
		{
			name: "fromPoolRef wins over ipAddressFromIPPool",
			template: `{
				"links": {"ethernets": [{"type": "phy", "id": "eth0"}]},
				"networks": {"ipv4": [{"id": "n", "link": "eth0", "ipAddressFromIPPool": "v4", "fromPoolRef": {"name": "nogw"}}]}
			}`,
			want: `{"links": [{"type": "phy", "id": "eth0", "mtu": 0}], "networks": [
				{"type": "ipv4", "id": "n", "link": "eth0", "ip_address": "172.16.0.9", "netmask": "255.240.0.0", "routes": []}
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
				{"type": "bond", "id": "bond0", "mtu": 0, "ethernet_mac_address": "12:34:56:78:9a:bc", "bond_mode": "active-backup", "bond_xmit_hash_policy": "", "bond_links": ["eth0", "eth1"]},
				{"type": "phy", "id": "eth0", "mtu": 0, "ethernet_mac_address": "12:34:56:78:9a:bc"},
				{"type": "phy", "id": "eth1", "mtu": 0, "ethernet_mac_address": "de:f0:12:34:56:79"},
				{"type": "vlan", "id": "v5", "mtu": 0, "vlan_mac_address": "de:f0:12:34:56:78", "vlan_id": 5, "vlan_link": "bond0"}
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
				{"type": "phy", "id": "eth0", "mtu": 0, "ethernet_mac_address": "52-54-00-12-34-56"},
				{"type": "phy", "id": "eth1", "mtu": 0, "ethernet_mac_address": "52:54:00:AB:CD:EF"}
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
				{"type": "phy", "id": "a", "mtu": 0, "ethernet_mac_address": "52:54:00:00:00:01"},
				{"type": "phy", "id": "b", "mtu": 0, "ethernet_mac_address": "52:54:00:00:00:02"},
				{"type": "phy", "id": "c", "mtu": 0, "ethernet_mac_address": "52:54:00:00:00:03"}
			], "networks": [], "services": []}`,
		},
		{
			name: "uninspected host: the only fromHostInterface ethernet takes the boot MAC",
			host: Host{BootMACAddress: "52:54:00:aa:bb:cc"},
			template: `{"links": {
				"ethernets": [
					{"type": "phy", "id": "eth0", "macAddress": {"fromHostInterface": "eno1"}},
					{"type": "phy", "id": "eth1", "macAddress": {"string": "52:54:00:aa:bb:cd", "fromHostInterface": "eno2"}},
					{"type": "phy", "id": "eth2"}
				],
				"vlans": [{"id": "v7", "vlanID": 7, "vlanLink": "eth0"}]
			}}`,
			want: `{"links": [
				{"type": "phy", "id": "eth0", "mtu": 0, "ethernet_mac_address": "52:54:00:aa:bb:cc"},
				{"type": "phy", "id": "eth1", "mtu": 0, "ethernet_mac_address": "52:54:00:aa:bb:cd"},
				{"type": "phy", "id": "eth2", "mtu": 0},
				{"type": "vlan", "id": "v7", "mtu": 0, "vlan_id": 7, "vlan_link": "eth0"}
			], "networks": [], "services": []}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nd := template(t, tt.template)
			got, err := Render(nd, tt.host, pools)
			require.NoError(t, err)
			assert.JSONEq(t, tt.want, string(got))

			names, err := PoolNames(nd, tt.host)
			require.NoError(t, err)
			for _, name := range names {
				assert.Contains(t, pools, name, "PoolNames returned a pool the case does not use")
			}
		})
	}
}

func TestRenderExactBytes(t *testing.T) {
	got, err := Render(nil, Host{}, nil)
	require.NoError(t, err)
	assert.Equal(t, `{"links":[],"networks":[],"services":[]}`, string(got))

	nd := template(t, `{"links": {"ethernets": [{"type": "phy", "id": "eth0", "mtu": 1500, "macAddress": {"string": "52:54:00:12:34:56"}}]},
		"services": {"dns": ["8.8.8.8"]}}`)
	got, err = Render(nd, Host{}, nil)
	require.NoError(t, err)
	assert.Equal(t, `{"links":[{"ethernet_mac_address":"52:54:00:12:34:56","id":"eth0","mtu":1500,"type":"phy"}],"networks":[],"services":[{"address":"8.8.8.8","type":"dns"}]}`,
		string(got), "keys are sorted and nothing is HTML-escaped")
}

func TestRenderIsDeterministic(t *testing.T) {
	params := make([]string, 0, 40)
	for _, p := range []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"} {
		params = append(params, `{"name": "p`+p+`", "value": {"k`+p+`": 1, "x": [1, 2], "a": "`+p+`"}}`)
	}
	nd := template(t, `{
		"links": {"ethernets": [{"type": "phy", "id": "eth0", "macAddress": {"fromAnnotation": {"object": "baremetalhost", "annotation": "m"}}}],
			"bonds": [{"id": "bond0", "bondMode": "802.3ad", "bondLinks": ["eth0"], "parameters": [`+strings.Join(params, ",")+`]}]},
		"networks": {"ipv4": [{"id": "n4", "link": "bond0", "ipAddressFromIPPool": "v4", "routes": [{"network": "10.0.0.0", "prefix": 8, "gateway": {"fromIPPool": "abc"}, "services": {"dnsFromIPPool": "v4"}}]}],
			"ipv6": [{"id": "n6", "link": "bond0", "fromPoolAnnotation": {"object": "baremetalhost", "annotation": "p6"}}]},
		"services": {"dns": ["9.9.9.9"], "dnsFromIPPool": "v6"}
	}`)
	host := Host{Annotations: map[string]string{"m": "52:54:00:12:34:56", "p6": "v6", "x": "y", "z": "w"}}
	first, err := Render(nd, host, pools)
	require.NoError(t, err)
	for range 50 {
		again, err := Render(nd, host, pools)
		require.NoError(t, err)
		require.True(t, bytes.Equal(first, again), "render output changed between calls:\n%s\n%s", first, again)
	}
}

func TestPoolNames(t *testing.T) {
	tests := []struct {
		name     string
		template string
		host     Host
		want     []string
	}{
		{name: "nil network data", want: []string{}},
		{name: "no pools", template: `{"links": {"ethernets": [{"type": "phy", "id": "eth0"}]}, "services": {"dns": ["8.8.8.8"]}}`, want: []string{}},
		{
			name: "every kind of reference, sorted and de-duplicated",
			host: Host{Annotations: map[string]string{"addr": "pool-ann", "gw": "pool-gw-ann", "dhcp-gw": "pool-dhcp-ann"}},
			template: `{
				"links": {"ethernets": [{"type": "phy", "id": "eth0"}]},
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
					"ipv4DHCP": [{"id": "e", "link": "eth0", "routes": [{"network": "0.0.0.0", "gateway": {"fromPoolAnnotation": {"object": "baremetalhost", "annotation": "dhcp-gw"}}}]}],
					"ipv6DHCP": [{"id": "f", "link": "eth0", "routes": [{"network": "::", "gateway": {"fromIPPool": "pool-dhcp6"}, "services": {"dnsFromIPPool": "pool-b"}}]}],
					"ipv6SLAAC": [{"id": "g", "link": "eth0", "routes": [{"network": "::", "gateway": {"fromPoolRef": {"name": "pool-slaac"}}}]}]
				},
				"services": {"dnsFromIPPool": "pool-dns"}
			}`,
			want: []string{"pool-a", "pool-ann", "pool-b", "pool-dhcp-ann", "pool-dhcp6", "pool-dns", "pool-gw", "pool-gw-ann", "pool-gw-ref", "pool-route-dns", "pool-slaac"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := PoolNames(template(t, tt.template), tt.host)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

// Each case breaks one thing; PoolNames and Render must both refuse it with
// an InputError on the given field whose message names the problem and fix.
func TestInputErrors(t *testing.T) {
	const eth0 = `{"type": "phy", "id": "eth0"}`
	net4 := func(extra string) string {
		return `{"links": {"ethernets": [` + eth0 + `]}, "networks": {"ipv4": [{"id": "n", "link": "eth0", ` + extra + `}]}}`
	}
	route4 := func(gateway string) string {
		return net4(`"ipAddressFromIPPool": "v4", "routes": [{"network": "10.0.0.0", "prefix": 8, "gateway": ` + gateway + `}]`)
	}
	tests := []struct {
		name     string
		template string
		nd       *capm3.NetworkData // when the case cannot be written as JSON
		host     Host
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
			template: `{"links": {"bonds": [{"id": "bond0", "bondMode": "802.3ad", "macAddress": {}}]}}`,
			field:    "spec.networkData.links.bonds[id=bond0].macAddress",
			contains: []string{"has no source", "remove macAddress"},
		},
		{
			name:     "MAC from a Machine annotation",
			template: `{"links": {"ethernets": [{"type": "phy", "id": "eth0", "macAddress": {"fromAnnotation": {"object": "machine", "annotation": "mac"}}}]}}`,
			field:    "spec.networkData.links.ethernets[id=eth0].macAddress.fromAnnotation.object",
			contains: []string{`"machine" does not exist before provisioning`, "baremetalhost", "macAddress.string"},
		},
		{
			name:     "MAC from a Metal3Machine annotation",
			template: `{"links": {"vlans": [{"id": "v1", "vlanID": 1, "vlanLink": "v2", "macAddress": {"fromAnnotation": {"object": "Metal3Machine", "annotation": "mac"}}}, {"id": "v2", "vlanID": 2, "vlanLink": "v1"}]}}`,
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
			name:     "uninspected host, only a bond uses fromHostInterface",
			host:     Host{BootMACAddress: "52:54:00:12:34:56"},
			template: `{"links": {"bonds": [{"id": "bond0", "bondMode": "802.3ad", "macAddress": {"fromHostInterface": "bond0"}}]}}`,
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
		// Address, gateway and DNS sources.
		{
			name:     "network address from a CAPI IPAM pool",
			template: net4(`"fromPoolRef": {"name": "capi-pool", "apiGroup": "ipam.cluster.x-k8s.io", "kind": "InClusterIPPool"}`),
			field:    "spec.networkData.networks.ipv4[id=n].fromPoolRef",
			contains: []string{`kind "InClusterIPPool" of apiGroup "ipam.cluster.x-k8s.io"`, "only Metal3 IPAM IPPools", "preprovisioning"},
		},
		{
			name:     "network address from another kind in the Metal3 group",
			template: net4(`"fromPoolRef": {"name": "p", "kind": "GlobalIPPool"}`),
			field:    "spec.networkData.networks.ipv4[id=n].fromPoolRef",
			contains: []string{`kind "GlobalIPPool" of apiGroup "ipam.metal3.io"`, "only Metal3 IPAM IPPools"},
		},
		{
			name:     "route gateway from a CAPI IPAM pool",
			template: route4(`{"fromPoolRef": {"name": "p", "apiGroup": "ipam.cluster.x-k8s.io", "kind": "IPPool"}}`),
			field:    "spec.networkData.networks.ipv4[id=n].routes[0].gateway.fromPoolRef",
			contains: []string{"only Metal3 IPAM IPPools"},
		},
		{
			name:     "network address pool from a Machine annotation",
			template: net4(`"fromPoolAnnotation": {"object": "machine", "annotation": "pool"}`),
			field:    "spec.networkData.networks.ipv4[id=n].fromPoolAnnotation.object",
			contains: []string{"does not exist before provisioning", "ipAddressFromIPPool or fromPoolRef"},
		},
		{
			name:     "route gateway pool from a Metal3Machine annotation",
			template: route4(`{"fromPoolAnnotation": {"object": "metal3machine", "annotation": "pool"}}`),
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
		{
			name:     "route prefix too long for IPv4",
			template: net4(`"ipAddressFromIPPool": "v4", "routes": [{"network": "10.0.0.0", "prefix": 33, "gateway": {}}]`),
			field:    "spec.networkData.networks.ipv4[id=n].routes[0].prefix",
			contains: []string{"33 is not a valid IPv4 prefix length", "0-32"},
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
			template: `{"links": {"ethernets": [` + eth0 + `], "bonds": [{"id": "bond0", "bondMode": "802.3ad", "bondLinks": ["eth0", "eth1"]}]}}`,
			field:    "spec.networkData.links.bonds[id=bond0].bondLinks[1]",
			contains: []string{`link "eth1" is not defined`},
		},
		{
			name:     "vlan on an undefined link",
			template: `{"links": {"vlans": [{"id": "v1", "vlanID": 1, "vlanLink": "bond0"}]}}`,
			field:    "spec.networkData.links.vlans[id=v1].vlanLink",
			contains: []string{`link "bond0" is not defined`},
		},
		{
			name:     "vlan on itself",
			template: `{"links": {"vlans": [{"id": "v1", "vlanID": 1, "vlanLink": "v1"}]}}`,
			field:    "spec.networkData.links.vlans[id=v1].vlanLink",
			contains: []string{"refers to itself"},
		},
		{
			name:     "vlan without vlanID",
			template: `{"links": {"ethernets": [` + eth0 + `], "vlans": [{"id": "v1", "vlanLink": "eth0"}]}}`,
			field:    "spec.networkData.links.vlans[id=v1].vlanID",
			contains: []string{"is not set"},
		},
		{
			name:     "duplicate link id across link types",
			template: `{"links": {"ethernets": [` + eth0 + `], "vlans": [{"id": "eth0", "vlanID": 1, "vlanLink": "eth0"}]}}`,
			field:    "spec.networkData.links.vlans[id=eth0].id",
			contains: []string{`link id "eth0" is also used by spec.networkData.links.ethernets[id=eth0]`},
		},
		{
			name:     "empty link id",
			template: `{"links": {"ethernets": [` + eth0 + `, {"type": "phy"}]}}`,
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
		// Bond parameters.
		{
			name: "bond parameters overwriting structured keys or each other",
			template: `{"links": {"bonds": [{"id": "bond0", "bondMode": "802.3ad", "parameters": [
				{"name": "mode", "value": "active-backup"}, {"name": "miimon", "value": 100}, {"name": "links", "value": []}, {"name": "miimon", "value": 200}]}]}}`,
			field:    "spec.networkData.links.bonds[id=bond0].parameters",
			contains: []string{`"mode", "links", "miimon" would overwrite`},
		},
		{
			name:     "bond parameter without a name",
			template: `{"links": {"bonds": [{"id": "bond0", "bondMode": "802.3ad", "parameters": [{"value": 1}]}]}}`,
			field:    "spec.networkData.links.bonds[id=bond0].parameters",
			contains: []string{"empty name"},
		},
		{
			name: "bond parameter that is not JSON",
			nd: &capm3.NetworkData{Links: &capm3.NetworkDataLink{Bonds: []capm3.NetworkDataLinkBond{{
				Id: "bond0", BondMode: "802.3ad",
				Parameters: []capm3.NetworkDataLinkBondParam{{Name: "miimon", Value: apiextensionsv1.JSON{Raw: []byte("{100")}}},
			}}}},
			field:    "spec.networkData.links.bonds[id=bond0].parameters[miimon].value",
			contains: []string{"is not valid JSON"},
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
			_, poolErr := PoolNames(nd, tt.host)
			_, renderErr := Render(nd, tt.host, pools)
			for _, err := range []error{poolErr, renderErr} {
				require.Error(t, err)
				assert.True(t, IsInputError(err), "want an input error, got %v", err)
				assert.False(t, errors.Is(err, ErrMissingAddress))
				var inputErr *InputError
				require.ErrorAs(t, err, &inputErr)
				assert.Equal(t, tt.field, inputErr.Field)
				for _, s := range tt.contains {
					assert.Contains(t, err.Error(), s)
				}
				assert.NotContains(t, err.Error(), "\n", "messages go into Events and must be one line")
			}
			assert.Equal(t, poolErr.Error(), renderErr.Error(), "PoolNames and Render must agree")
		})
	}
}

func TestRenderAddressErrors(t *testing.T) {
	const links = `"links": {"ethernets": [{"type": "phy", "id": "eth0"}]}`
	tests := []struct {
		name      string
		template  string
		addresses map[string]Address
		input     bool
		contains  []string
	}{
		{
			name:      "address pool missing from addresses",
			template:  `{` + links + `, "networks": {"ipv4": [{"id": "n", "link": "eth0", "ipAddressFromIPPool": "v4"}]}}`,
			addresses: map[string]Address{},
			contains:  []string{`spec.networkData.networks.ipv4[id=n]: no address was given for IPPool "v4"`, "PoolNames"},
		},
		{
			name:      "gateway pool missing from addresses",
			template:  `{` + links + `, "networks": {"ipv4DHCP": [{"id": "n", "link": "eth0", "routes": [{"network": "10.0.0.0", "gateway": {"fromIPPool": "gw"}}]}]}}`,
			addresses: pools,
			contains:  []string{`spec.networkData.networks.ipv4DHCP[id=n].routes[0].gateway: no address was given for IPPool "gw"`},
		},
		{
			name:      "route DNS pool missing from addresses",
			template:  `{` + links + `, "networks": {"ipv6DHCP": [{"id": "n", "link": "eth0", "routes": [{"network": "::", "gateway": {}, "services": {"dnsFromIPPool": "dns"}}]}]}}`,
			addresses: pools,
			contains:  []string{`routes[0].services.dnsFromIPPool: no address was given for IPPool "dns"`},
		},
		{
			name:      "top-level DNS pool missing from addresses",
			template:  `{"services": {"dnsFromIPPool": "dns"}}`,
			addresses: nil,
			contains:  []string{`spec.networkData.services.dnsFromIPPool: no address was given for IPPool "dns"`},
		},
		{
			name:      "pool prefix not valid for IPv4",
			template:  `{` + links + `, "networks": {"ipv4": [{"id": "n", "link": "eth0", "ipAddressFromIPPool": "wide"}]}}`,
			addresses: map[string]Address{"wide": {IP: "10.0.0.1", Prefix: 64}},
			input:     true,
			contains:  []string{`IPPool "wide" gave prefix 64, which is not a valid IPv4 prefix length (0-32)`},
		},
		{
			name:      "pool prefix not valid for IPv6",
			template:  `{` + links + `, "networks": {"ipv6": [{"id": "n", "link": "eth0", "ipAddressFromIPPool": "neg"}]}}`,
			addresses: map[string]Address{"neg": {IP: "2001:db8::1", Prefix: -1}},
			input:     true,
			contains:  []string{"gave prefix -1", "0-128"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nd := template(t, tt.template)
			_, err := PoolNames(nd, Host{})
			require.NoError(t, err, "only Render, which has the addresses, can see this problem")

			_, err = Render(nd, Host{}, tt.addresses)
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
		"52:54:00:12:34:56 ": false,
		"":                   false,
	} {
		assert.Equal(t, want, isMAC(mac), mac)
	}
}
