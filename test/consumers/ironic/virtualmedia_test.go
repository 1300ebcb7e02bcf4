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
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

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

// bootEnvironment is the package's Ironic, the BMCs and the provisioning
// network.
type bootEnvironment struct {
	ironic    *Server
	bmc       *redfishbmc.BMC
	network   *ramdiskhost.Network
	artifacts string
}

func startBootEnvironment(t *testing.T) *bootEnvironment {
	t.Helper()
	ctx := context.Background()
	env := &bootEnvironment{ironic: sharedIronic(t), artifacts: t.TempDir()}
	var err error
	env.bmc, err = redfishbmc.Start(filepath.Join(env.artifacts, "isos"))
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, env.bmc.Stop()) })

	// A boot that cannot run (not root, no network namespaces) fails: it
	// never passes with a log line.
	env.network, err = ramdiskhost.NewNetwork(ctx,
		net.JoinHostPort(ProvisioningAddress, strconv.Itoa(RamdiskAPIPort)), strings.TrimPrefix(env.ironic.URL, "http://"))
	require.NoError(t, err, "the hosts boot in network namespaces: this test runs as root")
	t.Cleanup(func() { assert.NoError(t, env.network.Close()) })
	return env
}

// inspect registers and inspects a host as BMO does and returns its node
// and the CD Ironic inserted.
func (env *bootEnvironment) inspect(t *testing.T, name, mac, document string) (*nodes.Node, *redfishbmc.Media) {
	t.Helper()
	start := time.Now()
	node, err := env.ironic.RegisterAndInspect(context.Background(), VirtualMediaHost{
		Namespace: "ns", Name: name, BMCAddress: env.bmc.AddHost(name),
		Username: "admin", Password: "password", BootMACAddress: mac, NetworkData: []byte(document),
	})
	require.NoError(t, err)
	t.Logf("%s registered, managed and inspecting after %s", name, time.Since(start).Round(time.Millisecond))
	host, ok := env.bmc.Host(name)
	require.True(t, ok)
	require.NotNil(t, host.Media, "ironic inserted no CD into %s", name)
	require.NoError(t, host.Media.Err)
	assert.Equal(t, "On", host.PowerState, "ironic powers the host on to boot the CD")
	assert.Equal(t, "Cd", host.BootTarget)
	return node, host.Media
}

// bootHost puts the host on the provisioning network and boots it with
// the ISO's network data.
func (env *bootEnvironment) bootHost(t *testing.T, name, mac string, media *redfishbmc.Media) (*ramdiskhost.Host, []string, error) {
	t.Helper()
	ctx := context.Background()
	if media.NetworkData != nil {
		gateways, err := ramdiskhost.Gateways(media.NetworkData)
		require.NoError(t, err)
		for _, gateway := range gateways {
			require.NoError(t, env.network.AddGateway(ctx, gateway))
		}
	}
	host, err := env.network.AddHost(ctx, name, mac)
	require.NoError(t, err)
	commands, err := host.Boot(ctx, media.NetworkData, filepath.Join(env.artifacts, "cloud-init", name))
	return host, commands, err
}

func TestAHostBootsItsRamdiskWithoutDHCP(t *testing.T) {
	env := startBootEnvironment(t)
	ctx := context.Background()

	t.Run("the ISO carries the host's network data, and the host reaches Ironic from its static address", func(t *testing.T) {
		mac, document := "00:5c:52:31:3e:01", fmt.Sprintf(ethernetDocument, "00:5c:52:31:3e:01", "192.168.116.100")
		node, media := env.inspect(t, "worker-0", mac, document)
		assert.Equal(t, "inspect wait", node.ProvisionState)
		assert.Equal(t, "config-2", media.VolumeID, "the ISO is a config drive")
		assert.JSONEq(t, document, string(media.NetworkData))
		assert.Equal(t, "http://"+net.JoinHostPort(ProvisioningAddress, strconv.Itoa(RamdiskAPIPort)), media.KernelParams["ipa-api-url"])
		assert.Equal(t, "vmedia", media.KernelParams["boot_method"])
		assert.NotContains(t, media.KernelParams, "ip", "no address on the kernel command line: the config drive is the only source")

		host, commands, err := env.bootHost(t, "worker-0", mac, media)
		require.NoError(t, err)
		t.Logf("applied:\n%s", strings.Join(commands, "\n"))
		addresses, err := host.Addresses(ctx)
		require.NoError(t, err)
		assert.Equal(t, []string{"192.168.116.100/24"}, addresses)
		found, err := host.Lookup(ctx, media.KernelParams["ipa-api-url"])
		require.NoError(t, err)
		assert.Equal(t, node.UUID, found.UUID)
	})

	t.Run("without pre-provisioning data the host has no address and cannot reach Ironic", func(t *testing.T) {
		mac := "00:5c:52:31:3e:02"
		_, media := env.inspect(t, "no-data", mac, "")
		assert.Nil(t, media.NetworkData, "the ISO has no network_data.json")
		host, _, err := env.bootHost(t, "no-data", mac, media)
		require.ErrorIs(t, err, ramdiskhost.ErrNoNetworkData)
		expectUnreachable(t, host, media)
	})

	t.Run("a document whose link names another MAC leaves the host unconfigured", func(t *testing.T) {
		mac := "00:5c:52:31:3e:03"
		document := fmt.Sprintf(ethernetDocument, "00:5c:52:31:3e:09", "192.168.116.103")
		_, media := env.inspect(t, "other-mac", mac, document)
		assert.JSONEq(t, document, string(media.NetworkData))
		host, _, err := env.bootHost(t, "other-mac", mac, media)
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
