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

package cloudinit

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/bits"
	"net/netip"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// bondParameters names, for each bond_<param> key of a link, the netplan
// parameter cloud-init turns it into. cloud-init drops any other key
// silently (an object such as bond_options included), so Check reports it.
var bondParameters = map[string]string{
	"bond_mode":             "mode",
	"bond_xmit_hash_policy": "transmit-hash-policy",
	"bond_miimon":           "mii-monitor-interval",
	"bond_lacp_rate":        "lacp-rate",
	"bond_updelay":          "up-delay",
	"bond_downdelay":        "down-delay",
	"bond_ad_select":        "ad-select",
	"bond_arp_interval":     "arp-interval",
	"bond_arp_ip_target":    "arp-ip-target",
	"bond_arp_validate":     "arp-validate",
	"bond_fail_over_mac":    "fail-over-mac-policy",
	"bond_min_links":        "min-links",
	"bond_num_grat_arp":     "gratuitous-arp",
	"bond_primary":          "primary",
	"bond_primary_reselect": "primary-reselect-policy",
}

// document is the OpenStack network_data these tests read.
type document struct {
	Links    []map[string]any `json:"links"`
	Networks []struct {
		ID        string `json:"id"`
		Type      string `json:"type"`
		Link      string `json:"link"`
		IPAddress string `json:"ip_address"`
		Netmask   string `json:"netmask"`
		Routes    []struct {
			Network string `json:"network"`
			Netmask string `json:"netmask"`
			Gateway string `json:"gateway"`
		} `json:"routes"`
	} `json:"networks"`
	Services []struct {
		Type    string `json:"type"`
		Address string `json:"address"`
	} `json:"services"`
}

// Check converts a document with cloud-init into dir and checks that the
// configuration does what the document says: every ethernet link's NIC
// matched by its MAC, with its MTU; every bond with its members, its MAC,
// its MTU, its mode and every bond_<param> the document sets; every VLAN
// with its id, its parent, its MAC and its MTU; every static address with
// its prefix and every route on the link the network names; DHCP and SLAAC
// networks; and the DNS servers of the document's services.
//
// cloud-init reads only the services at the top level of the document:
// DNS servers listed in a route's services are not applied, and are not
// checked here.
func Check(ctx context.Context, networkData []byte, dir string) error {
	plan, err := ToNetplan(ctx, networkData, dir)
	if err != nil {
		return err
	}
	problems, err := compare(ctx, networkData, plan, dir)
	if err != nil {
		return err
	}
	if len(problems) > 0 {
		return fmt.Errorf("cloud-init's netplan (%s) does not do what the network data says:\n%s",
			filepath.Join(dir, "netplan"), strings.Join(problems, "\n"))
	}
	return nil
}

// compare lists what a netplan configuration does differently from the
// document.
func compare(ctx context.Context, networkData []byte, plan *Netplan, dir string) ([]string, error) {
	var doc document
	if err := json.Unmarshal(networkData, &doc); err != nil {
		return nil, fmt.Errorf("network data is not JSON: %w", err)
	}
	c := &checker{plan: plan, devices: deviceNames(doc.Links)}
	for _, link := range doc.Links {
		c.checkLink(link)
	}
	c.checkNetworks(doc)
	if count := len(plan.Network.Ethernets) + len(plan.Network.Bonds) + len(plan.Network.VLANs); count != len(doc.Links) {
		c.problemf("netplan has %d devices for %d links", count, len(doc.Links))
	}
	if err := c.checkDNS(ctx, doc, networkData, dir); err != nil {
		return nil, err
	}
	return c.problems, nil
}

// deviceName is where cloud-init puts a link in netplan.
type deviceName struct {
	section string
	name    string
}

// deviceNames follows cloud-init's naming: an ethernet link is the NIC
// named after it (interfaceNames), bonds are bond0, bond1, ... in the order
// of the links, and a VLAN is <parent's name>.<vlan_id>.
func deviceNames(links []map[string]any) map[string]deviceName {
	devices := map[string]deviceName{}
	bonds := 0
	for _, link := range links {
		id := fmt.Sprint(link["id"])
		switch link["type"] {
		case "bond":
			devices[id] = deviceName{"bonds", fmt.Sprintf("bond%d", bonds)}
			bonds++
		case "vlan":
		default:
			devices[id] = deviceName{"ethernets", ethernetName(link)}
		}
	}
	for _, link := range links {
		if link["type"] == "vlan" {
			parent := devices[fmt.Sprint(link["vlan_link"])].name
			devices[fmt.Sprint(link["id"])] = deviceName{"vlans", parent + "." + scalar(link["vlan_id"])}
		}
	}
	return devices
}

type checker struct {
	plan     *Netplan
	devices  map[string]deviceName
	problems []string
}

func (c *checker) problemf(format string, args ...any) {
	c.problems = append(c.problems, fmt.Sprintf(format, args...))
}

// device finds the netplan device of a link id.
func (c *checker) device(linkID string) (Device, string, bool) {
	name, known := c.devices[linkID]
	if !known {
		c.problemf("no link %q", linkID)
		return Device{}, "", false
	}
	section := map[string]map[string]Device{
		"ethernets": c.plan.Network.Ethernets,
		"bonds":     c.plan.Network.Bonds,
		"vlans":     c.plan.Network.VLANs,
	}[name.section]
	device, found := section[name.name]
	if !found {
		c.problemf("link %s: no %s %q in netplan", linkID, name.section, name.name)
	}
	return device, name.name, found
}

func (c *checker) checkLink(link map[string]any) {
	id := fmt.Sprint(link["id"])
	device, _, found := c.device(id)
	if !found {
		return
	}
	if mtu, set := link["mtu"]; set && scalar(mtu) != strconv.Itoa(device.MTU) {
		c.problemf("link %s: mtu %d, want %s", id, device.MTU, scalar(mtu))
	}
	switch link["type"] {
	case "bond":
		c.checkBond(id, link, device)
	case "vlan":
		if device.ID != atoi(scalar(link["vlan_id"])) {
			c.problemf("vlan %s: id %d, want %s", id, device.ID, scalar(link["vlan_id"]))
		}
		if parent := c.devices[fmt.Sprint(link["vlan_link"])].name; device.Link != parent {
			c.problemf("vlan %s: link %q, want %q (link %v)", id, device.Link, parent, link["vlan_link"])
		}
		if want := strings.ToLower(fmt.Sprint(link["vlan_mac_address"])); device.MACAddress != want {
			c.problemf("vlan %s: macaddress %q, want %q", id, device.MACAddress, want)
		}
	default:
		want := strings.ToLower(fmt.Sprint(link["ethernet_mac_address"]))
		if device.Match == nil || device.Match.MACAddress != want {
			c.problemf("ethernet %s: not matched by MAC %s (match: %+v)", id, want, device.Match)
		}
		if device.SetName != ethernetName(link) {
			c.problemf("ethernet %s: set-name %q, want %q", id, device.SetName, ethernetName(link))
		}
	}
}

func (c *checker) checkBond(id string, link map[string]any, device Device) {
	var members []string
	links, _ := link["bond_links"].([]any)
	for _, member := range links {
		members = append(members, c.devices[fmt.Sprint(member)].name)
	}
	if !slices.Equal(device.Interfaces, members) {
		c.problemf("bond %s: interfaces %v, want %v", id, device.Interfaces, members)
	}
	if mac, set := link["ethernet_mac_address"]; set && device.MACAddress != strings.ToLower(fmt.Sprint(mac)) {
		c.problemf("bond %s: macaddress %q, want %v", id, device.MACAddress, mac)
	}
	for key, value := range link {
		if !strings.HasPrefix(key, "bond_") || key == "bond_links" {
			continue
		}
		parameter, applied := bondParameters[key]
		if !applied {
			c.problemf("bond %s: %s=%v is dropped by cloud-init (it applies scalar bond_<param> keys it knows: %v)",
				id, key, value, slices.Sorted(maps.Keys(bondParameters)))
			continue
		}
		if got, set := device.Parameters[parameter]; !set || scalar(got) != scalar(value) {
			c.problemf("bond %s: parameter %s is %v, want %v (from %s)", id, parameter, got, value, key)
		}
	}
}

func (c *checker) checkNetworks(doc document) {
	for _, network := range doc.Networks {
		device, name, found := c.device(network.Link)
		if !found {
			continue
		}
		switch network.Type {
		case "ipv4", "ipv6":
			address, err := prefixed(network.IPAddress, network.Netmask)
			if err != nil {
				c.problemf("network %s: %v", network.ID, err)
				continue
			}
			if !containsPrefix(device.Addresses, address) {
				c.problemf("network %s: %s has addresses %v, want %s", network.ID, name, device.Addresses, address)
			}
			for _, route := range network.Routes {
				to, err := prefixed(route.Network, route.Netmask)
				if err != nil {
					c.problemf("network %s: route: %v", network.ID, err)
					continue
				}
				if !slices.ContainsFunc(device.Routes, func(r Route) bool { return samePrefix(r.To, to) && r.Via == route.Gateway }) {
					c.problemf("network %s: %s has routes %+v, want to %s via %s", network.ID, name, device.Routes, to, route.Gateway)
				}
			}
		case "ipv4_dhcp":
			if !device.DHCP4 {
				c.problemf("network %s: %s has no dhcp4", network.ID, name)
			}
		case "ipv6_dhcp":
			if !device.DHCP6 {
				c.problemf("network %s: %s has no dhcp6", network.ID, name)
			}
		case "ipv6_slaac":
			// SLAAC needs router advertisements accepted.
			if device.AcceptRA != nil && !*device.AcceptRA {
				c.problemf("network %s: %s refuses router advertisements", network.ID, name)
			}
		default:
			c.problemf("network %s: type %q is not one these tests know", network.ID, network.Type)
		}
	}
}

// checkDNS: cloud-init's netplan gives the document's DNS servers to every
// device with a static address; with no static address anywhere it has no
// place for them, while its systemd-networkd output keeps them, so then the
// servers are looked for there.
func (c *checker) checkDNS(ctx context.Context, doc document, networkData []byte, dir string) error {
	var servers []string
	for _, service := range doc.Services {
		if service.Type == "dns" {
			servers = append(servers, service.Address)
		}
	}
	if len(servers) == 0 {
		return nil
	}
	withAddresses := 0
	for _, section := range []map[string]Device{c.plan.Network.Ethernets, c.plan.Network.Bonds, c.plan.Network.VLANs} {
		for name, device := range section {
			if len(device.Addresses) == 0 {
				continue
			}
			withAddresses++
			if !containsAll(device.Nameservers.Addresses, servers) {
				c.problemf("%s: nameservers %v, want %v", name, device.Nameservers.Addresses, servers)
			}
		}
	}
	if withAddresses > 0 {
		return nil
	}
	networkd, err := networkdDNS(ctx, networkData, dir)
	if err != nil {
		return err
	}
	if !containsAll(networkd, servers) {
		c.problemf("no static address, and cloud-init's systemd-networkd units (%s) set DNS %v, want %v",
			filepath.Join(dir, "networkd"), networkd, servers)
	}
	return nil
}

// prefixed writes an address or a network with the prefix length of its
// netmask, as netplan writes them.
func prefixed(address, netmask string) (netip.Prefix, error) {
	ip, err := netip.ParseAddr(address)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("address %q: %w", address, err)
	}
	mask, err := netip.ParseAddr(netmask)
	if err != nil || mask.BitLen() != ip.BitLen() {
		return netip.Prefix{}, fmt.Errorf("netmask %q of %s", netmask, address)
	}
	ones := 0
	for _, b := range mask.AsSlice() {
		ones += bits.OnesCount8(b)
	}
	// As many ones as the mask has, all in front.
	if netip.PrefixFrom(mask, ones).Masked().Addr() != mask {
		return netip.Prefix{}, fmt.Errorf("netmask %q of %s is not contiguous", netmask, address)
	}
	return netip.PrefixFrom(ip, ones), nil
}

func samePrefix(text string, want netip.Prefix) bool {
	got, err := netip.ParsePrefix(text)
	return err == nil && got == want
}

func containsPrefix(texts []string, want netip.Prefix) bool {
	return slices.ContainsFunc(texts, func(text string) bool { return samePrefix(text, want) })
}

func containsAll(have, want []string) bool {
	for _, item := range want {
		if !slices.Contains(have, item) {
			return false
		}
	}
	return true
}

// scalar writes a JSON or YAML scalar the same way whichever decoder read
// it: 100 and 100.0 both as 100.
func scalar(value any) string {
	if number, ok := value.(float64); ok {
		return strconv.FormatFloat(number, 'f', -1, 64)
	}
	return fmt.Sprint(value)
}

func atoi(text string) int {
	n, err := strconv.Atoi(text)
	if err != nil {
		return -1
	}
	return n
}
