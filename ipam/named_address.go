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
	"net/netip"
)

// networkDataNamesAddress is whether the OpenStack network_data document
// gives ip to one of its networks (networks[].ip_address): the address a
// host configures on a link. Addresses are compared parsed, so every
// spelling of one address (2001:db8::0:1, 2001:DB8::1, an IPv4-mapped IPv6
// address) is the same address, and an address that only appears elsewhere
// (a gateway, a DNS server, a route) or inside another is not named. An
// empty document names nothing: the host has no Secret.
//
// A document or an address that cannot be read names ip: whoever boots with
// that Secret may still use the address, and releasing it could hand it to a
// second machine, while keeping it only holds one address longer.
func networkDataNamesAddress(networkData []byte, ip string) bool {
	if len(networkData) == 0 {
		return false
	}
	want, err := netip.ParseAddr(ip)
	if err != nil {
		return true
	}
	var document struct {
		Networks []struct {
			IPAddress *string `json:"ip_address"`
		} `json:"networks"`
	}
	if err := json.Unmarshal(networkData, &document); err != nil {
		return true
	}
	for _, network := range document.Networks {
		if network.IPAddress == nil {
			continue
		}
		named, err := netip.ParseAddr(*network.IPAddress)
		if err != nil || sameAddress(named, want) {
			return true
		}
	}
	return false
}

// sameAddress compares two addresses without their zones, an IPv4-mapped
// IPv6 address as its IPv4 address.
func sameAddress(a, b netip.Addr) bool {
	return a.WithZone("").Unmap() == b.WithZone("").Unmap()
}
