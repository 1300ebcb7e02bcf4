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
	"fmt"
	"net"
	"strconv"
	"testing"

	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/nodes"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/capm3-preprov/capm3-preprov/test/consumers/ramdiskhost"
	"github.com/capm3-preprov/capm3-preprov/test/standins/redfishbmc"
)

// An ethernet host's document, as we render it: one link with the host's
// boot MAC, a static address and a default route, DNS.
const ethernetDocument = `{"links":[{"ethernet_mac_address":"%s","id":"enp1s0","mtu":1500,"type":"phy"}],` +
	`"networks":[{"id":"provisioning","ip_address":"%s","link":"enp1s0","netmask":"255.255.255.0","network_id":"provisioning",` +
	`"routes":[{"gateway":"192.168.116.1","netmask":"0.0.0.0","network":"0.0.0.0","services":[]}],"type":"ipv4"}],` +
	`"services":[{"address":"192.168.116.53","type":"dns"}]}`

// startSite is the package's Ironic with the BMC stand-in and the
// provisioning network around it. A boot that cannot run (not root, no
// network namespaces) fails: it never passes with a log line.
func startSite(t *testing.T) *Site {
	t.Helper()
	site, err := NewSite(t, "IPv4", sharedIronic(t), t.TempDir())
	require.NoError(t, err)
	return site
}

// inspect registers and inspects a host as BMO does and returns its node
// and the CD Ironic inserted, which the BMC boots from.
func inspect(t *testing.T, site *Site, name, mac, document string) (*nodes.Node, *redfishbmc.Media) {
	t.Helper()
	node, media := site.Inspect(t, VirtualMediaHost{
		Namespace: "ns", Name: name, Username: "admin", Password: "password", BootMACAddress: mac, NetworkData: []byte(document),
	})
	bmcHost, ok := site.BMC.Host("ns-" + name)
	require.True(t, ok)
	assert.Equal(t, "On", bmcHost.PowerState, "ironic powers the host on to boot the CD")
	assert.Equal(t, "Cd", bmcHost.BootTarget)
	return node, media
}

// bootHost boots the host with the ISO's network data, on a provisioning
// network with the document's gateways (the document is this test's own).
func bootHost(t *testing.T, site *Site, name, mac string, media *redfishbmc.Media) (*ramdiskhost.Host, error) {
	t.Helper()
	var routers []string
	if media.NetworkData != nil {
		var err error
		routers, err = ramdiskhost.Gateways(media.NetworkData)
		require.NoError(t, err)
	}
	return site.Boot(t, name, mac, routers, media)
}

func TestAHostBootsItsRamdiskWithoutDHCP(t *testing.T) {
	site := startSite(t)
	ctx := context.Background()

	t.Run("the ISO carries the host's network data, and the host reaches Ironic from its static address", func(t *testing.T) {
		mac, document := "00:5c:52:31:3e:01", fmt.Sprintf(ethernetDocument, "00:5c:52:31:3e:01", "192.168.116.100")
		node, media := inspect(t, site, "worker-0", mac, document)
		assert.Equal(t, "inspect wait", node.ProvisionState)
		assert.Equal(t, "config-2", media.VolumeID, "the ISO is a config drive")
		assert.JSONEq(t, document, string(media.NetworkData))
		assert.Equal(t, "http://"+net.JoinHostPort(ProvisioningAddress, strconv.Itoa(RamdiskAPIPort)), media.KernelParams["ipa-api-url"])
		assert.Equal(t, "vmedia", media.KernelParams["boot_method"])
		assert.NotContains(t, media.KernelParams, "ip", "no address on the kernel command line: the config drive is the only source")

		host, err := bootHost(t, site, "worker-0", mac, media)
		require.NoError(t, err)
		addresses, err := host.Addresses(ctx)
		require.NoError(t, err)
		assert.Equal(t, []string{"192.168.116.100/24"}, addresses)
		found, err := host.Lookup(ctx, media.KernelParams["ipa-api-url"])
		require.NoError(t, err)
		assert.Equal(t, node.UUID, found.UUID)
	})

	t.Run("without pre-provisioning data the host has no address and cannot reach Ironic", func(t *testing.T) {
		mac := "00:5c:52:31:3e:02"
		_, media := inspect(t, site, "no-data", mac, "")
		assert.Nil(t, media.NetworkData, "the ISO has no network_data.json")
		host, err := bootHost(t, site, "no-data", mac, media)
		require.ErrorIs(t, err, ramdiskhost.ErrNoNetworkData)
		expectUnreachable(t, host, media)
	})

	t.Run("a document whose link names another MAC leaves the host unconfigured", func(t *testing.T) {
		mac := "00:5c:52:31:3e:03"
		document := fmt.Sprintf(ethernetDocument, "00:5c:52:31:3e:09", "192.168.116.103")
		_, media := inspect(t, site, "other-mac", mac, document)
		assert.JSONEq(t, document, string(media.NetworkData))
		host, err := bootHost(t, site, "other-mac", mac, media)
		// cloud-init refuses a physical link without a NIC of its MAC.
		require.ErrorContains(t, err, "Unable to find a system nic")
		expectUnreachable(t, host, media)
	})
}

// expectUnreachable checks that a host has no address and that its lookup
// cannot even leave the host.
func expectUnreachable(t *testing.T, host *ramdiskhost.Host, media *redfishbmc.Media) {
	t.Helper()
	ctx := context.Background()
	addresses, err := host.Addresses(ctx)
	require.NoError(t, err)
	assert.Empty(t, addresses)
	_, err = host.Lookup(ctx, media.KernelParams["ipa-api-url"])
	assert.ErrorContains(t, err, "network is unreachable")
}
