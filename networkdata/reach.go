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
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
)

// Endpoint is an address the deploy ramdisk must reach without DHCP:
// Ironic's API, as the ramdisk calls it back, or the image server it
// downloads from.
type Endpoint struct {
	// Spelled is the endpoint as the user gave it: a URL or an address.
	Spelled string
	Address netip.Addr
}

// ParseEndpoint reads an endpoint given as a URL with an IP address
// (http://192.0.2.2:6385, https://[2001:db8::2]:6385/v1) or as a bare IP
// address. A host name is refused: the ramdisk resolves it with the DNS
// servers of its own network data, which the manager's resolver may answer
// otherwise (a cluster-internal name), so what the check would find is not
// what the ramdisk gets. Loopback, link-local and unspecified addresses are
// refused: no ramdisk reaches Ironic there.
func ParseEndpoint(spelled string) (Endpoint, error) {
	host := strings.Trim(spelled, "[]")
	if strings.Contains(spelled, "://") {
		u, err := url.Parse(spelled)
		if err != nil {
			return Endpoint{}, fmt.Errorf("%s is not a URL: %w", quote(spelled), err)
		}
		host = u.Hostname()
	}
	address, err := netip.ParseAddr(host)
	if err != nil || address.Zone() != "" {
		return Endpoint{}, fmt.Errorf("%s names no IP address: give the address the deploy ramdisk reaches it at, as a URL "+
			"(http://192.0.2.2:6385) or alone; a host name is not taken, since the ramdisk resolves it with its own network "+
			"data's DNS servers, not the manager's", quote(spelled))
	}
	address = address.Unmap()
	if address.IsLoopback() || address.IsUnspecified() || address.IsLinkLocalUnicast() {
		return Endpoint{}, fmt.Errorf("%s is a loopback, unspecified or link-local address, which the deploy ramdisk "+
			"cannot reach Ironic at: give Ironic's external address (ironic-image's IRONIC_EXTERNAL_CALLBACK_URL and "+
			"IRONIC_EXTERNAL_HTTP_URL), not BMO's IRONIC_ENDPOINT when that is internal", quote(spelled))
	}
	return Endpoint{Spelled: spelled, Address: address}, nil
}

// ParseEndpoints parses each endpoint, and fails on the first bad one.
func ParseEndpoints(spelled []string) ([]Endpoint, error) {
	endpoints := make([]Endpoint, 0, len(spelled))
	for _, s := range spelled {
		endpoint, err := ParseEndpoint(s)
		if err != nil {
			return nil, err
		}
		endpoints = append(endpoints, endpoint)
	}
	return endpoints, nil
}

// Unreached is an endpoint a network_data document gives the ramdisk no
// way to, and why.
type Unreached struct {
	Endpoint Endpoint
	Why      string
}

func (u Unreached) String() string {
	if u.Endpoint.Spelled == u.Endpoint.Address.String() {
		return fmt.Sprintf("%s: %s", u.Endpoint.Spelled, u.Why)
	}
	return fmt.Sprintf("%s (%s): %s", u.Endpoint.Spelled, u.Endpoint.Address, u.Why)
}

// Unreachable returns the endpoints a network_data document (Render's
// output) gives the ramdisk no way to: no network of the endpoint's family,
// or none whose subnet holds it and no route to it through a gateway on a
// subnet of the route's link. A DHCP or SLAAC network of the family counts
// as a way: what it brings is not in the document.
func Unreachable(document []byte, endpoints []Endpoint) ([]Unreached, error) {
	networks, err := readNetworks(document)
	if err != nil {
		return nil, err
	}
	var unreached []Unreached
	for _, endpoint := range endpoints {
		if why := networks.noWayTo(endpoint.Address); why != "" {
			unreached = append(unreached, Unreached{Endpoint: endpoint, Why: why})
		}
	}
	return unreached, nil
}

// reachNetwork is what the check reads of one network of the document.
type reachNetwork struct {
	ID        string       `json:"id"`
	Type      string       `json:"type"`
	Link      string       `json:"link"`
	IPAddress string       `json:"ip_address"`
	Netmask   string       `json:"netmask"`
	Routes    []reachRoute `json:"routes"`

	subnet netip.Prefix
}

type reachRoute struct {
	Network string `json:"network"`
	Netmask string `json:"netmask"`
	Gateway string `json:"gateway"`
}

type reachNetworks []reachNetwork

func readNetworks(document []byte) (reachNetworks, error) {
	var doc struct {
		Networks reachNetworks `json:"networks"`
	}
	if err := json.Unmarshal(document, &doc); err != nil {
		return nil, fmt.Errorf("reading network data: %w", err)
	}
	for i := range doc.Networks {
		n := &doc.Networks[i]
		if n.Type != "ipv4" && n.Type != "ipv6" {
			continue
		}
		var err error
		if n.subnet, err = prefixOf(n.IPAddress, n.Netmask); err != nil {
			return nil, fmt.Errorf("network %s: %w", n.ID, err)
		}
	}
	return doc.Networks, nil
}

// prefixOf is the subnet of an address with its netmask, as the document
// spells them.
func prefixOf(address, netmask string) (netip.Prefix, error) {
	ip, err := netip.ParseAddr(address)
	if err != nil {
		return netip.Prefix{}, err
	}
	mask := net.ParseIP(netmask)
	if mask == nil {
		return netip.Prefix{}, fmt.Errorf("netmask %s is not an address", quote(netmask))
	}
	if ip.Is4() {
		mask = mask.To4()
	}
	ones, bits := net.IPMask(mask).Size()
	if bits == 0 || bits != ip.BitLen() {
		return netip.Prefix{}, fmt.Errorf("netmask %s does not fit address %s", quote(netmask), address)
	}
	return ip.Prefix(ones)
}

// noWayTo says why the networks give no way to target, or "" when they do.
func (ns reachNetworks) noWayTo(target netip.Addr) string {
	fam, staticType := family(target.Is4()), "ipv6"
	if target.Is4() {
		staticType = "ipv4"
	}
	var static reachNetworks
	for _, n := range ns {
		switch {
		case n.Type == staticType+"_dhcp" || (!target.Is4() && n.Type == "ipv6_slaac"):
			return ""
		case n.Type == staticType:
			static = append(static, n)
		}
	}
	if len(static) == 0 {
		return fmt.Sprintf("the network data has no %s network, so the ramdisk has no %s address to reach it from; "+
			"add an %s network (an address from a pool of that family) with a route to it", fam, fam, fam)
	}
	var offLink []string
	for _, n := range static {
		if n.subnet.Contains(target) {
			return ""
		}
		for _, r := range n.Routes {
			via, carries := static.routeTo(n, r, target)
			switch {
			case carries && via:
				return ""
			case carries:
				offLink = append(offLink, fmt.Sprintf("route %s/%s on network %s goes through gateway %s, which is on no "+
					"subnet of link %s", r.Network, r.Netmask, n.ID, r.Gateway, n.Link))
			}
		}
	}
	if len(offLink) > 0 {
		return strings.Join(offLink, "; ") + ": give the route the gateway of the network's subnet"
	}
	return fmt.Sprintf("no %s network has it on its subnet (%s), and no route leads to it: add a route to it, "+
		"or a default route (%s), through the gateway of the network's subnet", fam, static.subnets(), defaultRoute(target.Is4()))
}

// routeTo reports whether route r of network n carries target, and whether
// its gateway is on a subnet of n's link (or, for IPv6, link-local), where
// the ramdisk can send to it.
func (ns reachNetworks) routeTo(n reachNetwork, r reachRoute, target netip.Addr) (via, carries bool) {
	destination, err := prefixOf(r.Network, r.Netmask)
	if err != nil || !destination.Masked().Contains(target) {
		return false, false
	}
	gateway, err := netip.ParseAddr(r.Gateway)
	if err != nil {
		return false, true
	}
	if gateway.Is6() && gateway.IsLinkLocalUnicast() {
		return true, true
	}
	for _, other := range ns {
		if other.Link == n.Link && other.subnet.IsValid() && other.subnet.Contains(gateway) {
			return true, true
		}
	}
	return false, true
}

func (ns reachNetworks) subnets() string {
	subnets := make([]string, 0, len(ns))
	for _, n := range ns {
		subnets = append(subnets, fmt.Sprintf("%s on network %s", n.subnet.Masked(), n.ID))
	}
	return strings.Join(subnets, ", ")
}

func defaultRoute(ipv4 bool) string {
	if ipv4 {
		return "network 0.0.0.0, prefix 0"
	}
	return `network "::", prefix 0`
}
