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
	"strings"
)

// eitherFamily accepts IPv4 and IPv6 addresses (top-level DNS servers).
const eitherFamily = "IP"

// addressProblem says why s is not an address of the family (family's
// "IPv4" or "IPv6", or eitherFamily) as Ironic's network_data schema accepts
// it wherever such an address goes, and how to write it; both are empty when
// it is one. The schema takes no zone, and takes a dotted IPv4 tail in some
// IPv6 forms and positions but not in others, so IPv6 is hex groups only.
func addressProblem(s, fam string) (problem, fix string) {
	a, err := netip.ParseAddr(s)
	switch {
	case err != nil || a.Zone() != "" || (fam != eitherFamily && a.Is4() != (fam == family(true))):
		return "is not an " + fam + " address", "write it like " + addressExamples[fam]
	case a.Is6() && strings.Contains(s, "."):
		return "writes an IPv6 address with a dotted IPv4 part, which Ironic's network_data schema refuses in some positions",
			"write its eight hex groups, " + quote(a.StringExpanded())
	}
	return "", ""
}

// parseAddress parses an address a template spells out, or says what is
// wrong with it and how to write it.
func parseAddress(field, s, fam string) (netip.Addr, error) {
	if problem, fix := addressProblem(s, fam); problem != "" {
		return netip.Addr{}, inputErr(field, "%s %s; %s", quote(s), problem, fix)
	}
	return netip.MustParseAddr(s), nil
}

var addressExamples = map[string]string{
	family(true):  "192.0.2.1",
	family(false): "2001:db8::1",
	eitherFamily:  "192.0.2.1 or 2001:db8::1",
}

// ironicRefusedMask is the one netmask of a valid prefix that Ironic's
// network_data schema refuses: its IPv4 netmask pattern has no
// 255.255.255.255, so a /32 address or route cannot be sent.
const ironicRefusedMask = "255.255.255.255"
