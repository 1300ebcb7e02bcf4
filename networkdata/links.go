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
	"bytes"
	"encoding/json"
	"errors"
	"strings"

	capm3 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
)

// The kinds of link, as errors name them.
const (
	kindBond     = "bond"
	kindEthernet = "ethernet"
	kindVlan     = "vlan"
)

// linkSpec is one link of any kind, so the three template lists share one
// code path, as networkSpec does for networks.
type linkSpec struct {
	field    string
	kind     string // kindBond, kindEthernet or kindVlan
	typ      string // the rendered "type": bond, vlan, or an ethernet's own type
	macKey   string // the key its MAC address renders under
	id, name string
	mtu      int32
	mac      *capm3.NetworkLinkEthernetMac
	// members are a bond's bondLinks, and its parent a vlan's vlanLink.
	members []string
	parent  string
	// bond is the template's bond (mode, hash policy, parameters), for bonds.
	bond   *capm3.NetworkDataLinkBond
	vlanID *int32
}

// linkSpecs lists the links in CAPM3's order: bonds, then ethernets, then
// vlans.
func linkSpecs(l *capm3.NetworkDataLink) []linkSpec {
	if l == nil {
		return nil
	}
	out := make([]linkSpec, 0, len(l.Bonds)+len(l.Ethernets)+len(l.Vlans))
	for i := range l.Bonds {
		b := &l.Bonds[i]
		out = append(out, linkSpec{
			field: item(root+".links.bonds", i, b.Id), kind: kindBond, typ: "bond", macKey: "ethernet_mac_address",
			id: b.Id, name: b.Name, mtu: b.MTU, mac: b.MACAddress, members: b.BondLinks, bond: b,
		})
	}
	for i, e := range l.Ethernets {
		out = append(out, linkSpec{
			field: item(root+".links.ethernets", i, e.Id), kind: kindEthernet, typ: e.Type, macKey: "ethernet_mac_address",
			id: e.Id, name: e.Name, mtu: e.MTU, mac: e.MACAddress,
		})
	}
	for i, v := range l.Vlans {
		out = append(out, linkSpec{
			field: item(root+".links.vlans", i, v.Id), kind: kindVlan, typ: "vlan", macKey: "vlan_mac_address",
			id: v.Id, name: v.Name, mtu: v.MTU, mac: v.MACAddress, parent: v.VlanLink, vlanID: v.VlanID,
		})
	}
	return out
}

// links renders the links, with mtu always and name only when set, as CAPM3
// does. Unlike CAPM3 it refuses a link without macAddress (see
// linkFieldErrors).
func (c *compiler) links(links []linkSpec) ([]any, error) {
	c.planBootMAC(links)
	out := make([]any, 0, len(links))
	for _, l := range links {
		entry, err := c.link(l)
		if err != nil {
			return nil, err
		}
		out = append(out, entry)
	}
	return out, nil
}

func (c *compiler) link(l linkSpec) (map[string]any, error) {
	entry := map[string]any{"type": l.typ, "id": l.id, "mtu": l.mtu}
	switch l.kind {
	case kindBond:
		entry["bond_mode"] = l.bond.BondMode
		entry["bond_xmit_hash_policy"] = l.bond.BondXmitHashPolicy
		entry["bond_links"] = l.members
	case kindVlan:
		if err := vlanIDErr(l.field, l.vlanID); err != nil {
			return nil, err
		}
		entry["vlan_id"] = *l.vlanID
		entry["vlan_link"] = l.parent
	}
	if l.name != "" {
		entry["name"] = l.name
	}
	if err := macSetErr(l); err != nil {
		return nil, err
	}
	mac, err := c.mac(l.mac, l.field)
	if err != nil {
		return nil, err
	}
	entry[l.macKey] = mac
	if l.kind != kindBond {
		return entry, nil
	}
	if err := addBondParams(entry, l.field, l.bond.Parameters); err != nil {
		return nil, err
	}
	// bondParamErrors has made sure these overwrite nothing but
	// placeholders (CAPM3 parameters without a value).
	for name, value := range c.bondParams[l.id] {
		entry["bond_"+name] = scalar(value)
	}
	return entry, nil
}

// addBondParams renders each parameter as bond_<name>. Like CAPM3 it refuses
// a parameter that would overwrite a key set from a structured field or an
// earlier parameter, and reports all of them at once.
func addBondParams(entry map[string]any, field string, params []capm3.NetworkDataLinkBondParam) error {
	var clashes []string
	for _, p := range params {
		if p.Name == "" {
			return inputErr(field+".parameters", "a parameter has an empty name; name every parameter (it is rendered as bond_<name>)")
		}
		key := "bond_" + p.Name
		if _, taken := entry[key]; taken {
			clashes = append(clashes, quote(p.Name))
			continue
		}
		v, err := jsonValue(p.Value.Raw)
		if err != nil {
			return inputErr(field+".parameters["+plain(p.Name)+"].value", "is not valid JSON; give a JSON value such as 100, \"fast\" or true")
		}
		entry[key] = v
	}
	if len(clashes) > 0 {
		return inputErr(field+".parameters", "%s would overwrite bond_mode, bond_xmit_hash_policy, bond_links or an earlier parameter; use bondMode, bondXmitHashPolicy and bondLinks for those and name each parameter once",
			strings.Join(clashes, ", "))
	}
	return nil
}

var errInvalidJSON = errors.New("invalid JSON")

// jsonValue decodes a parameter value so that it is re-encoded with sorted
// keys; numbers keep their exact spelling. No value renders as null, as in
// CAPM3.
func jsonValue(raw []byte) (any, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	if !json.Valid(raw) {
		return nil, errInvalidJSON
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}
