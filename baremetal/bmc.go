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

package baremetal

import (
	"fmt"
	"net"
	"net/url"
	"strings"
)

// bmcBootsOverNetwork lists the BMC address schemes of BMO v0.13.2
// (pkg/hardwareutils/bmc), each with what its driver's
// RequiresProvisioningNetwork returns. true: Ironic boots the deploy ramdisk
// over the network (PXE/iPXE), which needs a DHCP server, so the static
// network data only applies once the ramdisk runs. false: the ramdisk boots
// from virtual media (or UEFI HTTP boot) that Ironic can give the network
// data to. A scheme BMO does not know is left out: BMO refuses such a host.
var bmcBootsOverNetwork = map[string]bool{
	"ipmi":                       true,
	"libvirt":                    true,
	"redfish":                    true,
	"redfish+http":               true,
	"redfish+https":              true,
	"ilo5-redfish":               true,
	"ilo5-redfish+http":          true,
	"ilo5-redfish+https":         true,
	"idrac-redfish":              true,
	"idrac-redfish+http":         true,
	"idrac-redfish+https":        true,
	"redfish-virtualmedia":       false,
	"redfish-virtualmedia+http":  false,
	"redfish-virtualmedia+https": false,
	"ilo5-virtualmedia":          false,
	"ilo5-virtualmedia+http":     false,
	"ilo5-virtualmedia+https":    false,
	"idrac-virtualmedia":         false,
	"idrac-virtualmedia+http":    false,
	"idrac-virtualmedia+https":   false,
	"redfish-uefihttp":           false,
	"redfish-uefihttp+http":      false,
	"redfish-uefihttp+https":     false,
}

// bootNeedsDHCP returns the scheme of a BMC address whose driver boots the
// deploy ramdisk over the network, or "" for any other address. As in BMO,
// an address without a scheme (a host, or host:port) is IPMI.
func bootNeedsDHCP(address string) string {
	if address == "" {
		return "" // BMO reports a missing address itself
	}
	scheme := "ipmi"
	switch u, err := url.Parse(address); {
	case err != nil:
		if _, _, splitErr := net.SplitHostPort(address); strings.Contains(address, ":") && splitErr != nil {
			return "" // not an address BMO can parse
		}
	case u.Scheme != "":
		scheme = u.Scheme
	}
	if bmcBootsOverNetwork[scheme] {
		return scheme
	}
	return ""
}

// BootNeedsDHCPMessage is the note of the Warning event for a host whose BMC
// driver (scheme) boots the deploy ramdisk over the network.
func BootNeedsDHCPMessage(scheme string) string {
	return fmt.Sprintf("spec.bmc.address uses %s://, whose driver boots the deploy ramdisk over the network (PXE), which needs DHCP: "+
		"the static network data only applies once the ramdisk runs. The host is set up anyway, for networks with a DHCP server or relay "+
		"for the boot; for DHCP-less hosts use a virtual-media driver (redfish-virtualmedia://, idrac-virtualmedia://, ilo5-virtualmedia://), "+
		"see docs/ramdisk.md", scheme)
}
