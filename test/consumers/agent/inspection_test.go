//go:build inspection

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

package agent

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/nodes"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/capm3-preprov/capm3-preprov/test/consumers/ironic"
	"github.com/capm3-preprov/capm3-preprov/test/consumers/ramdiskhost"
	"github.com/capm3-preprov/capm3-preprov/test/standins/redfishbmc"
)

// The provisioning network's fixed topology: the hosts' router address,
// which does not come from the document under test, so a document with
// another gateway leaves its host without a route to Ironic.
const hostGateway = "192.168.116.1/24"

// An IPv4 host's document, as we render it: one link with the host's boot
// MAC, a static address and a default route, DNS.
const ipv4Document = `{"links":[{"ethernet_mac_address":"%s","id":"enp1s0","mtu":1500,"type":"phy"}],` +
	`"networks":[{"id":"provisioning","ip_address":"%s","link":"enp1s0","netmask":"255.255.255.0","network_id":"provisioning",` +
	`"routes":[{"gateway":"192.168.116.1","netmask":"0.0.0.0","network":"0.0.0.0","services":[]}],"type":"ipv4"}],` +
	`"services":[{"address":"192.168.116.53","type":"dns"}]}`

// HeartbeatTimeout bounds the wait for the agent's first heartbeat after
// inspection (its lookup retries, then heartbeats at once).
const HeartbeatTimeout = 2 * time.Minute

func TestTheAgentInspectsAHostWithoutDHCP(t *testing.T) {
	ctx := context.Background()
	root, err := FindRoot(ctx)
	require.NoError(t, err)
	work := t.TempDir()

	start := time.Now()
	server, err := StartIronic(ctx, root, filepath.Join(work, "ironic"))
	require.NoError(t, err)
	t.Logf("ironic 29 answered after %s", time.Since(start).Round(time.Millisecond))
	t.Cleanup(func() {
		assert.NoError(t, server.Stop())
		if t.Failed() {
			t.Logf("the end of %s:\n%s", server.LogPath, fileTail(server.LogPath, 60))
		}
	})
	bmc, err := redfishbmc.Start(filepath.Join(work, "isos"))
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, bmc.Stop()) })
	network, err := ramdiskhost.NewNetwork(ctx, fmt.Sprintf("%s:%d", ironic.ProvisioningAddress, ironic.RamdiskAPIPort), strings.TrimPrefix(server.URL, "http://"))
	require.NoError(t, err, "a host boots in a network namespace: this test runs as root")
	t.Cleanup(func() { assert.NoError(t, network.Close()) })
	require.NoError(t, network.AddGateway(ctx, hostGateway))

	name, mac, address := "worker-0", "00:5c:52:31:3e:01", "192.168.116.100"
	document := fmt.Sprintf(ipv4Document, mac, address)
	start = time.Now()
	node, err := server.RegisterAndInspect(ctx, ironic.VirtualMediaHost{
		Namespace: "ns", Name: name, BMCAddress: bmc.AddHost(name),
		Username: "admin", Password: "password", BootMACAddress: mac, NetworkData: []byte(document),
	})
	require.NoError(t, err)
	t.Logf("%s registered, managed and in %q after %s", name, node.ProvisionState, time.Since(start).Round(time.Millisecond))
	bmcHost, ok := bmc.Host(name)
	require.True(t, ok)
	require.NotNil(t, bmcHost.Media, "ironic inserted no CD into %s", name)
	require.NoError(t, bmcHost.Media.Err)
	media := bmcHost.Media
	assert.Equal(t, "config-2", media.VolumeID)
	assert.JSONEq(t, document, string(media.NetworkData))
	t.Logf("the ISO's kernel command line: %s", KernelCommandLine(media.KernelParams))

	host, err := network.AddHost(ctx, name, mac)
	require.NoError(t, err)
	commands, err := host.Boot(ctx, media.NetworkData, filepath.Join(work, "cloud-init", name))
	require.NoError(t, err)
	t.Logf("applied:\n%s", strings.Join(commands, "\n"))

	start = time.Now()
	agent, err := StartAgent(ctx, root, host.Namespace, filepath.Join(work, "agent", name), media.KernelParams)
	require.NoError(t, err)
	t.Cleanup(func() {
		agent.Stop()
		if t.Failed() {
			t.Log(agent)
		}
	})
	node, err = server.WaitForProvisionState(ctx, node.UUID, nodes.Manageable)
	require.NoError(t, err)
	t.Logf("%s inspected by the agent, %q after %s", name, node.ProvisionState, time.Since(start).Round(time.Millisecond))

	inventory, err := server.Inventory(ctx, node.UUID)
	require.NoError(t, err)
	var addresses []string
	for _, nic := range inventory.Interfaces {
		if strings.EqualFold(nic.MACAddress, mac) {
			addresses = append(addresses, nic.IPV4Address)
		}
	}
	assert.Equal(t, []string{address}, addresses, "the inventory's NIC with the boot MAC holds the host's static address")

	require.Eventually(t, func() bool {
		node, err = server.Node(ctx, node.UUID)
		return err == nil && node.DriverInternalInfo["agent_last_heartbeat"] != nil
	}, HeartbeatTimeout, time.Second, "the agent looks the node up and heartbeats")
	assert.True(t, agent.Running(), "the agent keeps running after its heartbeat")
	t.Logf("%s heartbeat after %s, its agent at %v", name, time.Since(start).Round(time.Millisecond), node.DriverInternalInfo["agent_url"])
}
