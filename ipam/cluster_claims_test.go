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

package ipam

import (
	"encoding/json"
	"testing"

	capm3 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/ptr"
	capipamv1 "sigs.k8s.io/cluster-api/api/ipam/v1beta2"

	"github.com/capm3-preprov/capm3-preprov/networkdata"
)

// The parity test of Cluster API IPAM pools: CAPM3's addressFromClaim takes
// an IPAddress's address, prefix and gateway and no DNS servers, and its
// renderNetworkNetworks/getRoutesv4 render them exactly as a Metal3
// IPAddress's. So a template taking its address and gateway from a Cluster
// API pool renders, for the same address, what the same template on a
// Metal3 IPPool renders: the ip_address, the netmask of the prefix and the
// route's gateway; and a DNS service from a Metal3 pool beside it.
func TestClusterAPIAddressRendersAsCAPM3(t *testing.T) {
	tests := []struct {
		name    string
		address capipamv1.IPAddressSpec
		ipv6    bool
		want    string
	}{
		{
			name:    "IPv4 with gateway",
			address: capipamv1.IPAddressSpec{Address: "192.0.2.10", Prefix: ptr.To(int32(24)), Gateway: "192.0.2.1"},
			want: `{"type": "ipv4", "id": "provisioning", "network_id": "provisioning", "link": "eth0", "ip_address": "192.0.2.10", "netmask": "255.255.255.0",
				"routes": [{"network": "0.0.0.0", "netmask": "0.0.0.0", "gateway": "192.0.2.1", "services": [{"type": "dns", "address": "198.51.100.53"}]}]}`,
		},
		{
			name:    "IPv4, a /30 prefix",
			address: capipamv1.IPAddressSpec{Address: "203.0.113.5", Prefix: ptr.To(int32(30)), Gateway: "203.0.113.6"},
			want: `{"type": "ipv4", "id": "provisioning", "network_id": "provisioning", "link": "eth0", "ip_address": "203.0.113.5", "netmask": "255.255.255.252",
				"routes": [{"network": "0.0.0.0", "netmask": "0.0.0.0", "gateway": "203.0.113.6", "services": [{"type": "dns", "address": "198.51.100.53"}]}]}`,
		},
		{
			// renderNetworkNetworks: type ipv6, the mask written out as an
			// IPv6 address (translateMask); getRoutesv6 likewise.
			name:    "IPv6 with gateway",
			address: capipamv1.IPAddressSpec{Address: "2001:db8:5::10", Prefix: ptr.To(int32(64)), Gateway: "2001:db8:5::1"},
			ipv6:    true,
			want: `{"type": "ipv6", "id": "provisioning", "network_id": "provisioning", "link": "eth0", "ip_address": "2001:db8:5::10", "netmask": "ffff:ffff:ffff:ffff::",
				"routes": [{"network": "::", "netmask": "::", "gateway": "2001:db8:5::1", "services": [{"type": "dns", "address": "2001:db8:53::53"}]}]}`,
		},
		{
			name:    "IPv6, a /120 prefix",
			address: capipamv1.IPAddressSpec{Address: "2001:db8:6::1:5", Prefix: ptr.To(int32(120)), Gateway: "2001:db8:6::1:fe"},
			ipv6:    true,
			want: `{"type": "ipv6", "id": "provisioning", "network_id": "provisioning", "link": "eth0", "ip_address": "2001:db8:6::1:5", "netmask": "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ff00",
				"routes": [{"network": "::", "netmask": "::", "gateway": "2001:db8:6::1:fe", "services": [{"type": "dns", "address": "2001:db8:53::53"}]}]}`,
		},
	}
	clusterAPIPool := capm3.IPPoolReference{Name: "rack", APIGroup: networkdata.ClusterAPIIPAMGroup, Kind: "InClusterIPPool"}
	metal3Pool := capm3.IPPoolReference{Name: "rack"}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fromClusterAPI, fromMetal3 := networkDataOn(clusterAPIPool, tt.ipv6), networkDataOn(metal3Pool, tt.ipv6)
			dns := networkdata.Address{IP: "198.51.100.9", Prefix: 24, DNSServers: []string{"198.51.100.53"}}
			if tt.ipv6 {
				dns = networkdata.Address{IP: "2001:db8:53::9", Prefix: 64, DNSServers: []string{"2001:db8:53::53"}}
			}
			address := addressOfClusterAPI(&capipamv1.IPAddress{Spec: tt.address})
			assert.Empty(t, address.DNSServers, "an IPAddress of Cluster API IPAM has no DNS servers, and CAPM3 renders none")
			got, err := networkdata.Render(fromClusterAPI, networkdata.Host{}, map[string]networkdata.Address{"rack": *address, "dns": dns})
			require.NoError(t, err)
			assert.JSONEq(t, tt.want, string(firstNetwork(t, got)))

			// The same address from a Metal3 IPPool (whose DNS servers the
			// template does not use) renders the same bytes.
			metal3 := addressOf(&ipamv1.IPAddress{Spec: ipamv1.IPAddressSpec{
				Address: ipamv1.IPAddressStr(tt.address.Address), Prefix: int(*tt.address.Prefix),
				Gateway: ptr.To(ipamv1.IPAddressStr(tt.address.Gateway)), DNSServers: []ipamv1.IPAddressStr{"192.0.2.53"},
			}})
			same, err := networkdata.Render(fromMetal3, networkdata.Host{}, map[string]networkdata.Address{"rack": *metal3, "dns": dns})
			require.NoError(t, err)
			assert.Equal(t, string(same), string(got))
		})
	}
}

// networkDataOn takes the address and default gateway of one network, IPv4
// or IPv6, from pool, and its DNS server from the Metal3 IPPool "dns".
func networkDataOn(pool capm3.IPPoolReference, ipv6 bool) *capm3.NetworkData {
	networks := &capm3.NetworkDataNetwork{IPv4: []capm3.NetworkDataIPv4{{
		ID: "provisioning", Link: "eth0", FromPoolRef: pool,
		Routes: []capm3.NetworkDataRoutev4{{
			Network: "0.0.0.0", Prefix: ptr.To(int32(0)),
			Gateway:  capm3.NetworkGatewayv4{FromPoolRef: pool},
			Services: &capm3.NetworkDataServicev4{DNSFromIPPool: "dns"},
		}},
	}}}
	if ipv6 {
		networks = &capm3.NetworkDataNetwork{IPv6: []capm3.NetworkDataIPv6{{
			ID: "provisioning", Link: "eth0", FromPoolRef: pool,
			Routes: []capm3.NetworkDataRoutev6{{
				Network: "::", Prefix: ptr.To(int32(0)),
				Gateway:  capm3.NetworkGatewayv6{FromPoolRef: pool},
				Services: &capm3.NetworkDataServicev6{DNSFromIPPool: "dns"},
			}},
		}}}
	}
	return &capm3.NetworkData{
		Links: &capm3.NetworkDataLink{Ethernets: []capm3.NetworkDataLinkEthernet{{
			Type: "phy", Id: "eth0", MTU: 1500, MACAddress: &capm3.NetworkLinkEthernetMac{String: "52:54:00:00:00:01"},
		}}},
		Networks: networks,
	}
}

func firstNetwork(t *testing.T, document []byte) json.RawMessage {
	t.Helper()
	var doc struct{ Networks []json.RawMessage }
	require.NoError(t, json.Unmarshal(document, &doc))
	require.Len(t, doc.Networks, 1)
	return doc.Networks[0]
}
