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
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseEndpoint(t *testing.T) {
	for _, tc := range []struct {
		name, spelled, address, err string
	}{
		{name: "URL with an IPv4 address", spelled: "http://192.0.2.2:6385/v1/", address: "192.0.2.2"},
		{name: "URL with an IPv6 address", spelled: "https://[2001:db8::2]:6385", address: "2001:db8::2"},
		{name: "bare IPv4 address", spelled: "192.0.2.2", address: "192.0.2.2"},
		{name: "bare IPv6 address", spelled: "2001:db8::2", address: "2001:db8::2"},
		{name: "bracketed IPv6 address", spelled: "[2001:db8::2]", address: "2001:db8::2"},
		{name: "IPv4-mapped IPv6 address is IPv4", spelled: "http://[::ffff:192.0.2.2]:6180", address: "192.0.2.2"},
		{name: "host name", spelled: "https://ironic.example.com:6385", err: "names no IP address"},
		{name: "bare host name", spelled: "ironic", err: "a host name is not taken"},
		{name: "URL without host", spelled: "http://", err: "names no IP address"},
		{name: "not a URL", spelled: "http://[2001:db8::2", err: "is not a URL"},
		{name: "address with a zone", spelled: "fe80::1%eth0", err: "names no IP address"},
		{name: "loopback, as BMO's IRONIC_ENDPOINT may be", spelled: "http://127.0.0.1:6385/v1/", err: "IRONIC_EXTERNAL_CALLBACK_URL"},
		{name: "IPv6 loopback", spelled: "::1", err: "loopback"},
		{name: "link-local", spelled: "169.254.0.1", err: "link-local"},
		{name: "unspecified", spelled: "0.0.0.0", err: "unspecified"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			endpoint, err := ParseEndpoint(tc.spelled)
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				assert.Contains(t, err.Error(), tc.spelled, "the error names the value")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, Endpoint{Spelled: tc.spelled, Address: netip.MustParseAddr(tc.address)}, endpoint)
		})
	}
}

func TestParseEndpointsFailsOnTheFirstBadOne(t *testing.T) {
	endpoints, err := ParseEndpoints([]string{"192.0.2.2", "ironic.local", "localhost"})
	require.Error(t, err)
	assert.Nil(t, endpoints)
	assert.Contains(t, err.Error(), `"ironic.local"`)
}

// Documents as Render writes them: one link enp1s0 unless a case says
// otherwise, each network with its routes.
const (
	ipv4OnLink = `{"networks":[{"id":"prov","type":"ipv4","link":"enp1s0","ip_address":"192.0.2.10",
		"netmask":"255.255.255.0","routes":[]}]}`
	ipv4DefaultRoute = `{"networks":[{"id":"prov","type":"ipv4","link":"enp1s0","ip_address":"198.51.100.10",
		"netmask":"255.255.255.0","routes":[{"network":"0.0.0.0","netmask":"0.0.0.0","gateway":"198.51.100.1","services":[]}]}]}`
	ipv4OffLinkGateway = `{"networks":[{"id":"prov","type":"ipv4","link":"enp1s0","ip_address":"198.51.100.10",
		"netmask":"255.255.255.0","routes":[{"network":"0.0.0.0","netmask":"0.0.0.0","gateway":"198.51.101.1","services":[]}]}]}`
	ipv4SpecificRoute = `{"networks":[{"id":"prov","type":"ipv4","link":"enp1s0","ip_address":"198.51.100.10",
		"netmask":"255.255.255.0","routes":[{"network":"192.0.2.0","netmask":"255.255.255.128","gateway":"198.51.100.1","services":[]}]}]}`
	ipv4NoRoute = `{"networks":[{"id":"prov","type":"ipv4","link":"enp1s0","ip_address":"198.51.100.10",
		"netmask":"255.255.255.0","routes":[]}]}`
	// The gateway is on the subnet of a second network of the same link.
	ipv4GatewayOnSameLink = `{"networks":[
		{"id":"prov","type":"ipv4","link":"enp1s0","ip_address":"198.51.100.10","netmask":"255.255.255.0",
		 "routes":[{"network":"0.0.0.0","netmask":"0.0.0.0","gateway":"203.0.113.1","services":[]}]},
		{"id":"other","type":"ipv4","link":"enp1s0","ip_address":"203.0.113.10","netmask":"255.255.255.0","routes":[]}]}`
	// The same, but the second network is on another link.
	ipv4GatewayOnOtherLink = `{"networks":[
		{"id":"prov","type":"ipv4","link":"enp1s0","ip_address":"198.51.100.10","netmask":"255.255.255.0",
		 "routes":[{"network":"0.0.0.0","netmask":"0.0.0.0","gateway":"203.0.113.1","services":[]}]},
		{"id":"other","type":"ipv4","link":"enp2s0","ip_address":"203.0.113.10","netmask":"255.255.255.0","routes":[]}]}`
	dualStack = `{"networks":[
		{"id":"v4","type":"ipv4","link":"enp1s0","ip_address":"192.168.115.100","netmask":"255.255.255.0",
		 "routes":[{"network":"0.0.0.0","netmask":"0.0.0.0","gateway":"192.168.115.1","services":[]}]},
		{"id":"v6","type":"ipv6","link":"enp1s0","ip_address":"2001:db8::100","netmask":"ffff:ffff:ffff:ffff::",
		 "routes":[{"network":"::","netmask":"::","gateway":"2001:db8::1","services":[]}]}]}`
	ipv6LinkLocalGateway = `{"networks":[{"id":"v6","type":"ipv6","link":"enp1s0","ip_address":"2001:db8::100",
		"netmask":"ffff:ffff:ffff:ffff::","routes":[{"network":"::","netmask":"::","gateway":"fe80::1","services":[]}]}]}`
	ipv4DHCP  = `{"networks":[{"id":"prov","type":"ipv4_dhcp","link":"enp1s0","routes":[]}]}`
	ipv6SLAAC = `{"networks":[{"id":"prov","type":"ipv6_slaac","link":"enp1s0","routes":[]}]}`
	ipv6DHCP  = `{"networks":[{"id":"prov","type":"ipv6_dhcp","link":"enp1s0","routes":[]}]}`
)

func TestUnreachable(t *testing.T) {
	for _, tc := range []struct {
		name, document, endpoint string
		// why is a part of the reason, empty when the endpoint is reachable.
		why string
	}{
		{name: "on the network's subnet", document: ipv4OnLink, endpoint: "192.0.2.2"},
		{name: "through the default route", document: ipv4DefaultRoute, endpoint: "http://192.0.2.2:6385"},
		{name: "through a route to its subnet", document: ipv4SpecificRoute, endpoint: "192.0.2.2"},
		{name: "outside the only route's subnet", document: ipv4SpecificRoute, endpoint: "192.0.2.200",
			why: "no IPv4 network has it on its subnet (198.51.100.0/24 on network prov), and no route leads to it"},
		{name: "no route at all", document: ipv4NoRoute, endpoint: "192.0.2.2",
			why: "add a route to it, or a default route (network 0.0.0.0, prefix 0), through the gateway of the network's subnet"},
		{name: "default route through a gateway off the subnet", document: ipv4OffLinkGateway, endpoint: "192.0.2.2",
			why: "route 0.0.0.0/0.0.0.0 on network prov goes through gateway 198.51.101.1, which is on no subnet of link enp1s0"},
		{name: "gateway on another network of the route's link", document: ipv4GatewayOnSameLink, endpoint: "192.0.2.2"},
		{name: "gateway on a network of another link", document: ipv4GatewayOnOtherLink, endpoint: "192.0.2.2",
			why: "which is on no subnet of link enp1s0"},
		{name: "IPv6 endpoint, IPv4 data (BMO issue 1664)", document: ipv4DefaultRoute, endpoint: "https://[2001:db8:1::2]:6385",
			why: "the network data has no IPv6 network, so the ramdisk has no IPv6 address to reach it from"},
		{name: "IPv4 endpoint, IPv6 data", document: ipv6LinkLocalGateway, endpoint: "192.0.2.2",
			why: "the network data has no IPv4 network"},
		{name: "dual stack, IPv4 endpoint", document: dualStack, endpoint: "192.0.2.2"},
		{name: "dual stack, IPv6 endpoint", document: dualStack, endpoint: "2001:db8:1::2"},
		{name: "IPv6 default route through a link-local gateway", document: ipv6LinkLocalGateway, endpoint: "2001:db8:1::2"},
		{name: "IPv4 DHCP", document: ipv4DHCP, endpoint: "192.0.2.2"},
		{name: "IPv6 SLAAC", document: ipv6SLAAC, endpoint: "2001:db8:1::2"},
		{name: "IPv6 DHCP", document: ipv6DHCP, endpoint: "2001:db8:1::2"},
		{name: "IPv6 DHCP for an IPv4 endpoint", document: ipv6DHCP, endpoint: "192.0.2.2", why: "no IPv4 network"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			endpoint, err := ParseEndpoint(tc.endpoint)
			require.NoError(t, err)
			unreached, err := Unreachable([]byte(tc.document), []Endpoint{endpoint})
			require.NoError(t, err)
			if tc.why == "" {
				assert.Empty(t, unreached)
				return
			}
			require.Len(t, unreached, 1)
			assert.Equal(t, endpoint, unreached[0].Endpoint)
			assert.Contains(t, unreached[0].Why, tc.why)
		})
	}
}

func TestUnreachableListsOnlyTheEndpointsWithoutAWay(t *testing.T) {
	endpoints, err := ParseEndpoints([]string{"http://192.0.2.2:6385", "https://[2001:db8:1::2]:6183", "192.0.2.3"})
	require.NoError(t, err)
	unreached, err := Unreachable([]byte(ipv4DefaultRoute), endpoints)
	require.NoError(t, err)
	require.Len(t, unreached, 1)
	assert.Equal(t, "https://[2001:db8:1::2]:6183 (2001:db8:1::2): the network data has no IPv6 network, so the ramdisk has "+
		"no IPv6 address to reach it from; add an IPv6 network (an address from a pool of that family) with a route to it",
		unreached[0].String())
}

func TestUnreachableOfRenderedDocument(t *testing.T) {
	nd := template(t, `{"links":{"ethernets":[{"type":"phy","id":"enp1s0","macAddress":{"string":"52:54:00:aa:bb:01"}}]},
		"networks":{"ipv6":[{"id":"v6","link":"enp1s0","ipAddressFromIPPool":"v6",
			"routes":[{"network":"::","prefix":0,"gateway":{"fromIPPool":"v6"}}]}]}}`)
	document, err := Render(nd, Host{Name: "node-0"}, map[string]Address{"v6": {IP: "2001:db8::100", Prefix: 64, Gateway: "2001:db8::1"}})
	require.NoError(t, err)
	endpoints, err := ParseEndpoints([]string{"https://[2001:db8:1::2]:6385", "http://192.0.2.2:6180"})
	require.NoError(t, err)
	unreached, err := Unreachable(document, endpoints)
	require.NoError(t, err)
	require.Len(t, unreached, 1)
	assert.Equal(t, "http://192.0.2.2:6180", unreached[0].Endpoint.Spelled)
}

func TestUnreachableRefusesWhatIsNotADocument(t *testing.T) {
	for _, document := range []string{
		`not json`,
		`{"networks":[{"id":"prov","type":"ipv4","ip_address":"192.0.2.10","netmask":"ffff::"}]}`,
		`{"networks":[{"id":"prov","type":"ipv4","ip_address":"192.0.2.10","netmask":"255.0.255.0"}]}`,
		`{"networks":[{"id":"prov","type":"ipv4","ip_address":"nowhere","netmask":"255.255.255.0"}]}`,
	} {
		_, err := Unreachable([]byte(document), nil)
		assert.Error(t, err, document)
	}
}
