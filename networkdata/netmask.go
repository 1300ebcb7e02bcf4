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

import "net"

// netmask spells a prefix length as CAPM3's translateMask does: dotted quad
// for IPv4 (24 -> 255.255.255.0), RFC 5952 text for IPv6
// (64 -> ffff:ffff:ffff:ffff::). It refuses lengths outside the family,
// where CAPM3 would print garbage.
func netmask(prefix int, ipv4 bool) (string, bool) {
	bits := 128
	if ipv4 {
		bits = 32
	}
	if prefix < 0 || prefix > bits {
		return "", false
	}
	return net.IP(net.CIDRMask(prefix, bits)).String(), true
}

func family(ipv4 bool) string {
	if ipv4 {
		return "IPv4"
	}
	return "IPv6"
}

func prefixRange(ipv4 bool) string {
	if ipv4 {
		return "0-32"
	}
	return "0-128"
}
