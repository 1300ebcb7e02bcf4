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
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestNetworkDataNamesAddress(t *testing.T) {
	// networks is a document whose networks have these ip_address values.
	networks := func(addresses ...string) string {
		entries := make([]string, 0, len(addresses))
		for _, address := range addresses {
			entries = append(entries, `{"id": "n", "type": "ipv6", "ip_address": "`+address+`"}`)
		}
		return `{"links": [], "services": [], "networks": [` + strings.Join(entries, ", ") + `]}`
	}
	tests := []struct {
		name        string
		networkData string
		ip          string
		want        bool
	}{
		{name: "the address as written", networkData: networks("192.0.2.10"), ip: "192.0.2.10", want: true},
		{name: "the second network's address", networkData: networks("192.0.2.10", "2001:db8::1"), ip: "2001:db8::1", want: true},
		{name: "IPv6 with a zero group spelled out", networkData: networks("2001:db8::0:1"), ip: "2001:db8::1", want: true},
		{name: "IPv6 in the address's long form", networkData: networks("2001:db8::1"), ip: "2001:0db8:0000:0000:0000:0000:0000:0001", want: true},
		{name: "IPv6 in upper case", networkData: networks("2001:DB8::A"), ip: "2001:db8::a", want: true},
		{name: "IPv4-mapped IPv6", networkData: networks("::ffff:192.0.2.10"), ip: "192.0.2.10", want: true},
		{name: "another address", networkData: networks("192.0.2.11"), ip: "192.0.2.10", want: false},
		{name: "an address that starts like it", networkData: networks("192.0.2.100"), ip: "192.0.2.10", want: false},
		{name: "an IPv6 address that starts like it", networkData: networks("2001:db8::10"), ip: "2001:db8::1", want: false},
		{
			name: "the address only as a gateway, a DNS server and a route",
			networkData: `{"links": [], "networks": [{"id": "n", "type": "ipv4", "ip_address": "192.0.2.11",
				"routes": [{"network": "192.0.2.10", "netmask": "255.255.255.255", "gateway": "192.0.2.10",
				"services": [{"type": "dns", "address": "192.0.2.10"}]}]}],
				"services": [{"type": "dns", "address": "192.0.2.10"}]}`,
			ip:   "192.0.2.10",
			want: false,
		},
		{name: "networks without addresses (DHCP)", networkData: `{"links": [], "services": [], "networks": [{"id": "n", "type": "ipv4_dhcp"}]}`,
			ip: "192.0.2.10", want: false},
		{name: "no networks", networkData: `{"links": [], "services": []}`, ip: "192.0.2.10", want: false},
		{name: "no document: the host has no Secret", networkData: "", ip: "192.0.2.10", want: false},
		// What cannot be read may name the address: it is kept.
		{name: "a document that is not JSON", networkData: `{"networks": [`, ip: "192.0.2.10", want: true},
		{name: "networks of the wrong type", networkData: `{"networks": {"ip_address": "192.0.2.11"}}`, ip: "192.0.2.10", want: true},
		{name: "an ip_address that is not an address", networkData: networks("192.0.2.10/24"), ip: "192.0.2.11", want: true},
		{name: "an address that is not one", networkData: networks("192.0.2.10"), ip: "not-an-address", want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, networkDataNamesAddress([]byte(tt.networkData), tt.ip))
		})
	}
}
