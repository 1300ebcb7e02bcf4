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
	"strings"

	capm3 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
)

// mac resolves a link's MAC address. The sources are tried in CAPM3's order:
// string, fromHostInterface, fromAnnotation.
func (c *compiler) mac(m *capm3.NetworkLinkEthernetMac, link string) (string, error) {
	field := link + ".macAddress"
	switch {
	case m.String != "":
		if !isMAC(m.String) {
			return "", inputErr(field+".string", "%s is not a MAC address; write six hex pairs separated by : or -, e.g. 52:54:00:12:34:56", quote(m.String))
		}
		return m.String, nil
	case m.FromHostInterface != "":
		return c.macFromHostInterface(m.FromHostInterface, field+".fromHostInterface", link)
	case m.FromAnnotation != (capm3.NetworkLinkEthernetMacFromAnnotation{}):
		return c.macFromAnnotation(m.FromAnnotation, field+".fromAnnotation")
	}
	return "", inputErr(field, "has no source; set string, fromHostInterface or fromAnnotation")
}

// planBootMAC finds the link allowed to take the host's bootMACAddress.
// Before inspection the host has no NIC list, so a fromHostInterface name
// cannot be looked up; the boot MAC is the only MAC we know, and it can only
// belong to a physical (ethernet) interface, and to only one of them.
func (c *compiler) planBootMAC(links []linkSpec) {
	for _, l := range links {
		if l.mac == nil || l.mac.String != "" || l.mac.FromHostInterface == "" {
			continue
		}
		c.hostInterfaceLinks = append(c.hostInterfaceLinks, strings.TrimPrefix(l.field, root+"."))
		if l.kind == kindEthernet {
			c.bootMACLink = l.field
		}
	}
	if len(c.hostInterfaceLinks) != 1 || len(c.host.NICs) > 0 {
		c.bootMACLink = ""
	}
}

func (c *compiler) macFromHostInterface(name, field, link string) (string, error) {
	if len(c.host.NICs) > 0 {
		names := make([]string, 0, len(c.host.NICs))
		for _, nic := range c.host.NICs {
			if nic.Name == name { // exact match, as CAPM3's getBMHMacByName
				if !isMAC(nic.MAC) {
					return "", inputErr(field, "BareMetalHost NIC %s reports MAC %s, which is not a MAC address; use macAddress.string instead", quote(name), quote(nic.MAC))
				}
				return nic.MAC, nil
			}
			names = append(names, quote(nic.Name))
		}
		return "", inputErr(field, "the BareMetalHost has no NIC named %s (it has %s); use one of those names, which are case-sensitive", quote(name), strings.Join(names, ", "))
	}
	if link != c.bootMACLink {
		return "", inputErr(field, "the BareMetalHost is not inspected yet, so interface %s is unknown; spec.bootMACAddress stands in only when exactly one link uses fromHostInterface and it is an ethernet, but it is used by %s; use macAddress.string or macAddress.fromAnnotation with object baremetalhost",
			quote(name), strings.Join(c.hostInterfaceLinks, ", "))
	}
	switch boot := c.host.BootMACAddress; {
	case boot == "":
		return "", inputErr(field, "the BareMetalHost is not inspected yet and has no spec.bootMACAddress to stand in for interface %s; set spec.bootMACAddress, or use macAddress.string or macAddress.fromAnnotation with object baremetalhost", quote(name))
	case !isMAC(boot):
		return "", inputErr(field, "the BareMetalHost is not inspected yet and its spec.bootMACAddress %s, which stands in for interface %s, is not a MAC address; fix spec.bootMACAddress or use macAddress.string", quote(boot), quote(name))
	default:
		return boot, nil
	}
}

func (c *compiler) macFromAnnotation(a capm3.NetworkLinkEthernetMacFromAnnotation, field string) (string, error) {
	v, err := c.annotation(a.Object, a.Annotation, field, "macAddress.string")
	if err != nil {
		return "", err
	}
	if v == "" {
		return "", inputErr(field+".annotation", "BareMetalHost annotation %s is missing or empty; set it to the interface's MAC address, or use macAddress.string", quote(a.Annotation))
	}
	if !isMAC(v) {
		return "", inputErr(field+".annotation", "BareMetalHost annotation %s holds %s, which is not a MAC address; set it to six hex pairs separated by : or -, e.g. 52:54:00:12:34:56", quote(a.Annotation), quote(v))
	}
	return v, nil
}

// annotation reads an annotation of the object a template names. Before
// provisioning only the BareMetalHost exists. alternative names the template
// field to use instead.
func (c *compiler) annotation(object, key, field, alternative string) (string, error) {
	switch strings.ToLower(object) { // CAPM3 compares object names case-insensitively
	case "baremetalhost":
		return c.host.Annotations[key], nil
	case "machine", "metal3machine":
		return "", inputErr(field+".object", "%s does not exist before provisioning; use object baremetalhost (an annotation on the BareMetalHost) or %s", quote(object), alternative)
	}
	return "", inputErr(field+".object", "unknown object %s; use baremetalhost, the only object that exists before provisioning", quote(object))
}

// isMAC accepts what CAPM3 accepts: ^([0-9A-Fa-f]{2}[:-]){5}([0-9A-Fa-f]{2})$.
func isMAC(s string) bool {
	if len(s) != 17 {
		return false
	}
	for i := range len(s) {
		ch := s[i]
		if i%3 == 2 {
			if ch != ':' && ch != '-' {
				return false
			}
			continue
		}
		if !isHex(ch) {
			return false
		}
	}
	return true
}

func isHex(ch byte) bool {
	return '0' <= ch && ch <= '9' || 'a' <= ch && ch <= 'f' || 'A' <= ch && ch <= 'F'
}
