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
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	capm3 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
)

// hostInterfaceLinks maps the id of each link whose MAC the template takes
// from a host interface (fromHostInterface) to that interface's name. Before
// inspection spec.bootMACAddress stands in for the interface; once BMO has
// inspected the host, its NIC of that name gives the MAC, which may differ.
func hostInterfaceLinks(networkData *capm3.NetworkData) map[string]string {
	links := map[string]string{}
	if networkData == nil || networkData.Links == nil {
		return links
	}
	add := func(id string, mac *capm3.NetworkLinkEthernetMac) {
		// The renderer tries string first, as CAPM3 does.
		if mac != nil && mac.String == "" && mac.FromHostInterface != "" {
			links[id] = mac.FromHostInterface
		}
	}
	for _, bond := range networkData.Links.Bonds {
		add(bond.Id, bond.MACAddress)
	}
	for _, ethernet := range networkData.Links.Ethernets {
		add(ethernet.Id, ethernet.MACAddress)
	}
	for _, vlan := range networkData.Links.Vlans {
		add(vlan.Id, vlan.MACAddress)
	}
	return links
}

// macChange is a link whose MAC, taken from a host interface, differs
// between the network data a Secret held and the data written over it.
type macChange struct {
	link, hostInterface, was, now string
}

func (c macChange) String() string {
	return fmt.Sprintf("link %q (host interface %q) from %s to %s", c.link, c.hostInterface, c.was, c.now)
}

// macChanges compares the MACs of the host-interface links in the network
// data written before and the data written now.
func macChanges(hostInterfaces map[string]string, written, rendered []byte) []macChange {
	if len(hostInterfaces) == 0 {
		return nil
	}
	was, now := linkMACs(written), linkMACs(rendered)
	var changes []macChange
	for _, link := range slices.Sorted(maps.Keys(hostInterfaces)) {
		before, after := was[link], now[link]
		if before != "" && after != "" && !strings.EqualFold(before, after) {
			changes = append(changes, macChange{link: link, hostInterface: hostInterfaces[link], was: before, now: after})
		}
	}
	return changes
}

// linkMACs reads the MAC of each link of a network_data document by link
// id; a document that does not parse has none.
func linkMACs(networkData []byte) map[string]string {
	var document struct {
		Links []struct {
			ID          string `json:"id"`
			EthernetMAC string `json:"ethernet_mac_address"`
			VlanMAC     string `json:"vlan_mac_address"`
		} `json:"links"`
	}
	if err := json.Unmarshal(networkData, &document); err != nil {
		return nil
	}
	macs := make(map[string]string, len(document.Links))
	for _, link := range document.Links {
		macs[link.ID] = link.EthernetMAC + link.VlanMAC
	}
	return macs
}

// reportMACChanges warns that the MAC of links in the host's Secret
// changed: the ramdisk now configures another NIC than before.
func (m *HostManager) reportMACChanges(ctx context.Context, host *bmov1alpha1.BareMetalHost, secretName string,
	changes []macChange,
) {
	if len(changes) == 0 {
		return
	}
	items := make([]string, 0, len(changes))
	for _, change := range changes {
		items = append(items, change.String())
	}
	message := fmt.Sprintf("the MAC address in Secret %q changed: %s. The host's inspection data names another MAC for "+
		"these interfaces than the network data used before (before inspection spec.bootMACAddress stands in for the one "+
		"fromHostInterface link); if that is not the NIC you meant, fix the interface names in the template's links",
		secretName, strings.Join(items, "; "))
	ctrl.LoggerFrom(ctx).Info("MAC address of the host's network data changed", "secret", secretName, "changes", items)
	m.event(host, corev1.EventTypeWarning, ReasonMACChanged, message, items...)
}
