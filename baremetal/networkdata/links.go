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

// links renders the links in CAPM3's order: bonds, then ethernets, then vlans,
// with mtu always and name only when set, as CAPM3 does. Unlike CAPM3 it
// refuses a link without macAddress (see linkFieldErrors).
func (c *compiler) links(l capm3.NetworkDataLink) ([]any, error) {
	c.planBootMAC(l)
	out := make([]any, 0, len(l.Bonds)+len(l.Ethernets)+len(l.Vlans))
	for i, b := range l.Bonds {
		field := item(root+".links.bonds", i, b.Id)
		entry := map[string]any{
			"type":                  "bond",
			"id":                    b.Id,
			"mtu":                   b.MTU,
			"bond_mode":             b.BondMode,
			"bond_xmit_hash_policy": b.BondXmitHashPolicy,
			"bond_links":            b.BondLinks,
		}
		if err := c.common(entry, field, b.Name, "ethernet_mac_address", "bond", b.MACAddress); err != nil {
			return nil, err
		}
		if err := addBondParams(entry, field, b.Parameters); err != nil {
			return nil, err
		}
		// bondParamErrors has made sure these overwrite nothing but
		// placeholders (CAPM3 parameters without a value).
		for name, value := range c.bondParams[b.Id] {
			entry["bond_"+name] = scalar(value)
		}
		out = append(out, entry)
	}
	for i, e := range l.Ethernets {
		field := item(root+".links.ethernets", i, e.Id)
		entry := map[string]any{"type": e.Type, "id": e.Id, "mtu": e.MTU}
		if err := c.common(entry, field, e.Name, "ethernet_mac_address", "ethernet", e.MACAddress); err != nil {
			return nil, err
		}
		out = append(out, entry)
	}
	for i, v := range l.Vlans {
		field := item(root+".links.vlans", i, v.Id)
		if err := vlanIDErr(field, v.VlanID); err != nil {
			return nil, err
		}
		entry := map[string]any{
			"type":      "vlan",
			"id":        v.Id,
			"mtu":       v.MTU,
			"vlan_id":   *v.VlanID,
			"vlan_link": v.VlanLink,
		}
		if err := c.common(entry, field, v.Name, "vlan_mac_address", "vlan", v.MACAddress); err != nil {
			return nil, err
		}
		out = append(out, entry)
	}
	return out, nil
}

// common adds the optional name and the MAC address, under macKey, of a
// link of its kind.
func (c *compiler) common(entry map[string]any, field, name, macKey, kind string, mac *capm3.NetworkLinkEthernetMac) error {
	if name != "" {
		entry["name"] = name
	}
	if err := macSetErr(field, mac, macKey, kind); err != nil {
		return err
	}
	addr, err := c.mac(mac, field)
	if err != nil {
		return err
	}
	entry[macKey] = addr
	return nil
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
