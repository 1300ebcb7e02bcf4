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
	"slices"
	"strconv"
	"strings"
)

// checkLinks returns the link ids with their fields, or the first problem
// linkErrors finds.
func checkLinks(links []linkSpec) (map[string]string, error) {
	ids, errs := linkErrors(links)
	if len(errs) > 0 {
		return nil, errs[0]
	}
	return ids, nil
}

// linkErrors checks that link ids are set and unique, that bonds and vlans
// only refer to defined links, and what linkFieldErrors checks. It returns the
// link ids with their fields and every problem, in template order.
func linkErrors(links []linkSpec) (map[string]string, []error) {
	ids := make(map[string]string, len(links))
	var errs []error
	for _, l := range links {
		if l.id == "" {
			errs = append(errs, inputErr(l.field+".id", "is empty; give every link a unique id"))
			continue
		}
		if other, dup := ids[l.id]; dup {
			errs = append(errs, inputErr(l.field+".id", "link id %s is also used by %s; link ids must be unique across ethernets, bonds and vlans", quote(l.id), other))
			continue
		}
		ids[l.id] = l.field
	}
	for _, l := range links {
		for j, member := range l.members {
			if err := checkLinkRef(ids, l.field+".bondLinks["+strconv.Itoa(j)+"]", member, l.id); err != nil {
				errs = append(errs, err)
			}
		}
		if l.kind != kindVlan {
			continue
		}
		if err := checkLinkRef(ids, l.field+".vlanLink", l.parent, l.id); err != nil {
			errs = append(errs, err)
		}
	}
	return ids, append(errs, linkFieldErrors(links)...)
}

// ethernetTypes are the ethernet link types of CAPM3's schema, the same as
// those of Ironic's network_data schema.
var ethernetTypes = []string{"bridge", "dvs", "hw_veb", "hyperv", "ovs", "tap", "vhostuser", "vif", "phy"}

// bondModes are the bond modes of CAPM3's schema. Ironic's network_data
// schema lists the same ones, with 802.3ad misspelt 802.1ad up to Ironic 21.4.
var bondModes = []string{"balance-rr", "active-backup", "balance-xor", "broadcast", "balance-tlb", "balance-alb", "802.3ad"}

// MTU range of CAPM3's schema, inside the 1-65535 of Ironic's; the API
// server fills in 1500 when mtu is left out.
const minMTU, maxMTU = 1280, 9000

// linkFieldErrors checks each link's own fields, which no host changes:
// those Ironic's network_data schema requires (a MAC address on every link,
// bond members, an mtu it accepts) and the enums of CAPM3's schema.
func linkFieldErrors(links []linkSpec) []error {
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	for _, l := range links {
		switch l.kind {
		case kindBond:
			add(enumErr(l.field+".bondMode", l.bond.BondMode, "a bond mode", bondModes))
			if len(l.members) == 0 {
				add(inputErr(l.field+".bondLinks", "is empty; list the ids of the bond's member links: Ironic's network_data schema requires bond_links, and a bond without members carries no traffic"))
			}
		case kindEthernet:
			add(enumErr(l.field+".type", l.typ, "an ethernet link type", ethernetTypes))
		case kindVlan:
			add(vlanIDErr(l.field, l.vlanID))
		}
		add(mtuErr(l.field, l.mtu))
		add(macSetErr(l))
	}
	return errs
}

func enumErr(field, value, what string, allowed []string) error {
	switch {
	case value == "":
		return inputErr(field, "is not set; set it to one of %s", strings.Join(allowed, ", "))
	case !slices.Contains(allowed, value):
		return inputErr(field, "%s is not %s; use one of %s", quote(value), what, strings.Join(allowed, ", "))
	}
	return nil
}

func mtuErr(link string, mtu int32) error {
	if mtu < minMTU || mtu > maxMTU {
		return inputErr(link+".mtu", "%d is outside %d-%d, the MTUs CAPM3's schema accepts; set mtu, e.g. 1500", mtu, minMTU, maxMTU)
	}
	return nil
}

// macSetErr refuses a link without macAddress: Ironic's network_data schema
// requires its MAC key on every link.
func macSetErr(l linkSpec) error {
	if l.mac == nil {
		return inputErr(l.field+".macAddress", "is not set; Ironic's network_data schema requires %s on every %s: set string, fromHostInterface or fromAnnotation", l.macKey, l.kind)
	}
	return nil
}

func vlanIDErr(link string, id *int32) error {
	if id == nil {
		return inputErr(link+".vlanID", "is not set; set the VLAN id (0-4096)")
	}
	return nil
}

// checkNetworks returns the first problem networkErrors finds.
func checkNetworks(nets []networkSpec, links map[string]string) error {
	if errs := networkErrors(nets, links); len(errs) > 0 {
		return errs[0]
	}
	return nil
}

// networkErrors checks that network ids are set and unique and that every
// network sits on a defined link. It returns every problem, in template order.
func networkErrors(nets []networkSpec, links map[string]string) []error {
	ids := make(map[string]string, len(nets))
	var errs []error
	for _, n := range nets {
		switch other, dup := ids[n.id]; {
		case n.id == "":
			errs = append(errs, inputErr(n.field+".id", "is empty; give every network a unique id"))
		case dup:
			errs = append(errs, inputErr(n.field+".id", "network id %s is also used by %s; network ids must be unique across all network types", quote(n.id), other))
		default:
			ids[n.id] = n.field
		}
		if err := checkLinkRef(links, n.field+".link", n.link, ""); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// checkLinkRef checks one reference by link id, which is what cloud-init
// resolves bond_links, vlan_link and a network's link against.
func checkLinkRef(ids map[string]string, field, target, self string) error {
	switch _, ok := ids[target]; {
	case target == "":
		return inputErr(field, "is empty; set it to the id of a link defined under links")
	case !ok:
		return inputErr(field, "link %s is not defined; define a link with that id under links.ethernets, links.bonds or links.vlans, or fix the reference", quote(target))
	case target == self:
		return inputErr(field, "link %s refers to itself; refer to another link", quote(target))
	}
	return nil
}
