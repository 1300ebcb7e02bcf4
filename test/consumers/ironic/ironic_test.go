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

package ironic

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/capm3-preprov/capm3-preprov/test/consumers/networkdataschema"
)

// A document of our kind: an ethernet link, a bond of two links with a
// VLAN on it, and a static IPv4 network with a route on the VLAN.
const document = `{
  "links": [
    {"id": "eno1", "type": "phy", "mtu": 1500, "ethernet_mac_address": "00:5c:52:31:3c:01"},
    {"id": "eno2", "type": "phy", "mtu": 1500, "ethernet_mac_address": "00:5c:52:31:3c:02"},
    {"id": "bond0", "type": "bond", "mtu": 1500, "ethernet_mac_address": "00:5c:52:31:3c:01",
     "bond_mode": "%s", "bond_links": ["eno1", "eno2"], "bond_xmit_hash_policy": "layer3+4", "bond_miimon": 100},
    {"id": "vlan100", "type": "vlan", "mtu": 1500, "vlan_link": "bond0", "vlan_id": 100, "vlan_mac_address": "00:5c:52:31:3c:01"}
  ],
  "networks": [
    {"id": "provisioning", "network_id": "provisioning", "type": "ipv4", "link": "vlan100",
     "ip_address": "192.168.114.100", "netmask": "255.255.255.0",
     "routes": [{"network": "0.0.0.0", "netmask": "0.0.0.0", "gateway": "192.168.114.1", "services": []}]}
  ],
  "services": [{"type": "dns", "address": "192.168.114.53"}]
}`

func TestIronicValidatesNetworkData(t *testing.T) {
	ctx := context.Background()
	server := sharedIronic(t)

	activeBackup := []byte(fmt.Sprintf(document, "active-backup"))
	t.Run("a valid document is stored", func(t *testing.T) {
		node, err := server.Node(ctx, "ns", "valid")
		require.NoError(t, err)
		assert.Equal(t, "ns~valid", node.Name)
		assert.Equal(t, "fake-hardware", node.Driver)
		start := time.Now()
		stored, err := server.SetNetworkData(ctx, node, activeBackup)
		require.NoError(t, err)
		t.Logf("one submission took %s", time.Since(start).Round(time.Millisecond))
		assert.Equal(t, "active-backup", linkField(t, stored.NetworkData, 2, "bond_mode"))

		again, err := server.Node(ctx, "ns", "valid")
		require.NoError(t, err)
		assert.Equal(t, node.UUID, again.UUID, "a known host keeps its node")
		assert.Equal(t, stored.NetworkData, again.NetworkData)
	})

	t.Run("a network without network_id is refused", func(t *testing.T) {
		node, err := server.Node(ctx, "ns", "no-network-id")
		require.NoError(t, err)
		_, err = server.SetNetworkData(ctx, node, []byte(withoutNetworkID("active-backup")))
		assert.True(t, InvalidNetworkData(err), "%v", err)
	})

	t.Run("every broken variant of a stored document is refused", func(t *testing.T) {
		accepted, err := server.Accept(ctx, "ns", "broken", activeBackup)
		require.NoError(t, err)
		assert.Len(t, brokenVariants(accepted.NetworkData), 2)
		assert.NoError(t, server.RefusesBroken(ctx, accepted))
	})

	// Ironic 21.4 listed bond mode 802.1ad where Linux says 802.3ad;
	// Ironic 29.0.5's schema lists 802.3ad in its place.
	t.Run("an 802.3ad bond is stored by Ironic 29 as it is", func(t *testing.T) {
		bondModes, err := server.schema.BondModes()
		require.NoError(t, err)
		require.Contains(t, bondModes, "802.3ad")
		require.NotContains(t, bondModes, "802.1ad")
		accepted, err := server.Accept(ctx, "ns", "lacp", []byte(fmt.Sprintf(document, "802.3ad")))
		require.NoError(t, err)
		assert.Equal(t, "802.3ad", linkField(t, accepted.Node.NetworkData, 2, "bond_mode"))
	})

	t.Run("an 802.1ad bond, 21.4's name of the mode, is refused by Ironic 29", func(t *testing.T) {
		node, err := server.Node(ctx, "ns", "lacp-old-name")
		require.NoError(t, err)
		_, err = server.SetNetworkData(ctx, node, []byte(fmt.Sprintf(document, "802.1ad")))
		assert.True(t, InvalidNetworkData(err), "%v", err)
		assert.ErrorContains(t, err, "802.1ad")
	})

	t.Run("a refused document is explained by the schema's account of it", func(t *testing.T) {
		_, err := server.Accept(ctx, "ns", "lacp-no-network-id", []byte(withoutNetworkID("802.3ad")))
		require.ErrorContains(t, err, "ironic did not take the host's network data")
		assert.ErrorContains(t, err, "/networks/0: missing property 'network_id'")
	})
}

// linkField is a field of a link of a network data document.
func linkField(t *testing.T, networkData map[string]any, index int, field string) any {
	t.Helper()
	links, ok := networkData["links"].([]any)
	require.True(t, ok, "links is a list: %v", networkData["links"])
	require.Greater(t, len(links), index)
	link, ok := links[index].(map[string]any)
	require.True(t, ok, "link %d is an object: %v", index, links[index])
	return link[field]
}

func withoutNetworkID(bondMode string) string {
	return strings.Replace(fmt.Sprintf(document, bondMode), `"network_id": "provisioning", `, "", 1)
}

// Ironic names one failure, often from a branch of a oneOf that was never
// meant; the account of its schema (the root's) names the real one.
func TestSchemaFailuresNameTheMeantBranch(t *testing.T) {
	t.Parallel()
	root, err := FindRoot(context.Background())
	require.NoError(t, err)
	schema, err := networkdataschema.Load(networkdataschema.InRoot(root.Dir))
	require.NoError(t, err)
	failures := func(document string) []string {
		t.Helper()
		var networkData map[string]any
		require.NoError(t, json.Unmarshal([]byte(document), &networkData))
		found, err := schema.Failures(networkData)
		require.NoError(t, err)
		return found
	}
	assert.Equal(t, []string{"/networks/0: missing property 'network_id'"}, failures(withoutNetworkID("active-backup")))
	assert.Equal(t, []string{"/links/1: missing property 'ethernet_mac_address'"},
		failures(strings.Replace(fmt.Sprintf(document, "active-backup"), `"ethernet_mac_address": "00:5c:52:31:3c:02"`, `"name": "eno2"`, 1)))
	assert.Equal(t, []string{"/links/2/bond_mode: value must be one of '802.3ad', 'balance-rr', 'active-backup', 'balance-xor', 'broadcast', 'balance-tlb', 'balance-alb'"},
		failures(fmt.Sprintf(document, "802.1ad")))
}

// The schema pure packages test against without the root (the machine's
// copy, from Debian 12's python3-ironic, with bond mode 802.1ad renamed
// 802.3ad) is the schema of the Ironic these tests run.
func TestTheUnitTestsSchemaIsIronic29s(t *testing.T) {
	t.Parallel()
	root, err := FindRoot(context.Background())
	require.NoError(t, err)
	ironic29, err := networkdataschema.ReadDocument(networkdataschema.InRoot(root.Dir))
	require.NoError(t, err)
	machines, err := networkdataschema.MachineAsIronic29()
	require.NoError(t, err)
	assert.Equal(t, ironic29, machines, "%s, 802.1ad renamed, differs from the root's copy: the unit tests check against another schema than Ironic 29's", networkdataschema.Path)
}
