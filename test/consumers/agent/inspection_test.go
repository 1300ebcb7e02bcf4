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
	"errors"
	"fmt"
	"net"
	"net/netip"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/nodes"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/capm3-preprov/capm3-preprov/networkdata"
	"github.com/capm3-preprov/capm3-preprov/test/consumers/ironic"
	"github.com/capm3-preprov/capm3-preprov/test/consumers/ramdiskhost"
	"github.com/capm3-preprov/capm3-preprov/test/standins/redfishbmc"
)

// The fixed topology: Ironic's address on each provisioning network, as
// Metal3 runs one Ironic per address family the ramdisks reach it over
// (ipa-api-url holds one URL). The routers are the example pools' gateways.
const (
	ironicIPv4Address = ironic.ProvisioningAddress
	ironicIPv6Address = "fd2e:6f44:5dd8:c956::2"
)

const (
	// InspectionTimeout bounds the agent's inspection: its wait for an
	// IPv4 address on every NIC (ipa-inspection-dhcp-all-interfaces, 60 s
	// for a host without one), LLDP (30 s), the inventory, the post.
	InspectionTimeout = 8 * time.Minute
	// HeartbeatTimeout bounds the wait for the agent's first heartbeat
	// after inspection (its lookup, retried, then a heartbeat at once):
	// minutes on a machine loaded by eight agents and two Ironics.
	HeartbeatTimeout = 5 * time.Minute
	// postAttempt is what the agent logs each time it posts its inventory;
	// it posts again only after a connection error or a 5xx or 409.
	postAttempt = "Posting collected data to"
)

func TestTheAgentInspectsHostsWithoutDHCP(t *testing.T) {
	t.Parallel()
	root, err := FindRoot(context.Background())
	require.NoError(t, err)
	ipv4, ipv6 := startSites(t, root)

	rackA1 := loadExampleHost(t, "preprovisioning-template", "rack-a1-0", "rack-a1", 0)
	ipv6Only := loadExampleHost(t, "ipv6", "ipv6-0", "ipv6-only", 0)
	dualStack := loadExampleHost(t, "ipv6", "dual-stack-0", "dual-stack", 2)

	t.Run("an IPv4 host, over IPv4", func(t *testing.T) {
		t.Parallel()
		document := render(t, rackA1, rackA1.RendererHost(), rackA1.Addresses)
		ipv4.expectReachCheck(t, document, "")
		ipv4.expectInspected(t, rackA1.Name, rackA1.BootMACAddress, document, rackA1)
	})
	t.Run("an IPv6-only host, over IPv6", func(t *testing.T) {
		t.Parallel()
		document := render(t, ipv6Only, ipv6Only.RendererHost(), ipv6Only.Addresses)
		ipv6.expectReachCheck(t, document, "")
		ipv6.expectInspected(t, ipv6Only.Name, ipv6Only.BootMACAddress, document, ipv6Only)
	})
	for _, site := range []*site{ipv4, ipv6} {
		t.Run("a dual-stack host, over "+site.name, func(t *testing.T) {
			t.Parallel()
			document := render(t, dualStack, dualStack.RendererHost(), dualStack.Addresses)
			site.expectReachCheck(t, document, "")
			site.expectInspected(t, dualStack.Name, dualStack.BootMACAddress, document, dualStack)
		})
	}

	// Each negative host is rack-a1's next host (its own MAC and address on
	// the same network), with one thing wrong.
	negative := func(order int, mac string) (networkdata.Host, map[string]networkdata.Address) {
		host := loadExampleHost(t, "preprovisioning-template", "rack-a1-0", "rack-a1", order)
		rendererHost := host.RendererHost()
		rendererHost.Name, rendererHost.BootMACAddress = fmt.Sprintf("rack-a1-%d", order), mac
		return rendererHost, host.Addresses
	}
	t.Run("without pre-provisioning data the ISO has no network data and the host no address", func(t *testing.T) {
		t.Parallel()
		host, _ := negative(1, "00:5c:52:31:3b:f1")
		ipv4.expectNeverReached(t, host.Name, host.BootMACAddress, nil, rackA1.Routers, ramdiskhost.ErrNoNetworkData.Error(), "network is unreachable")
	})
	t.Run("a document whose link has another MAC leaves the NIC unconfigured", func(t *testing.T) {
		t.Parallel()
		host, addresses := negative(2, "00:5c:52:31:3b:f2")
		other := host
		other.BootMACAddress = "00:5c:52:31:3b:f9"
		// cloud-init refuses a physical link without a NIC of its MAC.
		ipv4.expectNeverReached(t, host.Name, host.BootMACAddress, render(t, rackA1, other, addresses), rackA1.Routers, "Unable to find a system nic", "network is unreachable")
	})
	t.Run("a document with another gateway than the network's router leaves the host without a way out", func(t *testing.T) {
		t.Parallel()
		host, addresses := negative(3, "00:5c:52:31:3b:f3")
		wrong := addresses["rack-a1-provisioning"]
		wrong.Gateway = "192.168.112.254"
		addresses["rack-a1-provisioning"] = wrong
		// The gateway is on the host's subnet, so its route is made; no
		// router answers for that address.
		ipv4.expectNeverReached(t, host.Name, host.BootMACAddress, render(t, rackA1, host, addresses), rackA1.Routers, "", "no route to host")
	})
	t.Run("a document with a prefix that leaves the gateway off the host's subnet gives it no default route", func(t *testing.T) {
		t.Parallel()
		host, addresses := negative(4, "00:5c:52:31:3b:f4")
		wrong := addresses["rack-a1-provisioning"]
		wrong.Prefix = 28 // 192.168.112.96/28 does not hold the gateway 192.168.112.1
		addresses["rack-a1-provisioning"] = wrong
		document := render(t, rackA1, host, addresses)
		ipv4.expectReachCheck(t, document, "which is on no subnet")
		ipv4.expectNeverReached(t, host.Name, host.BootMACAddress, document, rackA1.Routers, "Nexthop has invalid gateway", "network is unreachable")
	})
	// What the manager's --ramdisk-endpoints check (issue 35 item 6, BMO
	// issue 1664) keeps paused: data without an address of Ironic's family.
	t.Run("an IPv6-only host whose Ironic is on IPv4 never reaches it, as the manager's check says", func(t *testing.T) {
		t.Parallel()
		host := ipv6Only.RendererHost()
		host.Name, host.BootMACAddress = "ipv6-1", "00:5c:52:31:3b:f5"
		document := render(t, ipv6Only, host, ipv6Only.Addresses)
		ipv4.expectReachCheck(t, document, "no IPv4")
		ipv4.expectNeverReached(t, host.Name, host.BootMACAddress, document, rackA1.Routers, "", "network is unreachable")
	})
}

// expectReachCheck runs the manager's check of a rendered document against
// this site's Ironic: it finds no fault (why empty), or one that says why.
func (s *site) expectReachCheck(t *testing.T, document []byte, why string) {
	t.Helper()
	endpoint, err := networkdata.ParseEndpoint("http://" + net.JoinHostPort(s.address, "6385"))
	require.NoError(t, err)
	unreached, err := networkdata.Unreachable(document, []networkdata.Endpoint{endpoint})
	require.NoError(t, err)
	if why == "" {
		assert.Empty(t, unreached, "the check finds a way to %s's Ironic", s.name)
		return
	}
	require.Len(t, unreached, 1, "the check finds no way to %s's Ironic", s.name)
	assert.Contains(t, unreached[0].Why, why)
}

func loadExampleHost(t *testing.T, example, host, template string, order int) *ExampleHost {
	t.Helper()
	h, err := LoadExampleHost(example, host, template, order)
	require.NoError(t, err)
	return h
}

func render(t *testing.T, example *ExampleHost, host networkdata.Host, addresses map[string]networkdata.Address) []byte {
	t.Helper()
	document, err := example.Render(host, addresses)
	require.NoError(t, err)
	return document
}

// site is one Ironic 29 whose API the ramdisks reach at one address, the
// Redfish stand-in, and the provisioning network: a relay at that address
// and the hosts' routers.
type site struct {
	// registering lets one host at a time register and start its
	// inspection: Ironic is one process, and building several ISOs at once
	// on a loaded machine slows its API past the tests' bounds. The agents
	// run side by side.
	registering sync.Mutex
	name        string
	// address is Ironic's address on the provisioning network.
	address string
	root    *Root
	work    string
	ironic  *Ironic
	bmc     *redfishbmc.BMC
	network *ramdiskhost.Network
}

// startSites starts the IPv4 and the IPv6 site side by side (each Ironic
// takes half a minute to answer on a quiet machine).
func startSites(t *testing.T, root *Root) (ipv4, ipv6 *site) {
	t.Helper()
	sites := []*site{
		{name: "IPv4", address: ironicIPv4Address, root: root, work: filepath.Join(t.TempDir(), "ipv4")},
		{name: "IPv6", address: ironicIPv6Address, root: root, work: filepath.Join(t.TempDir(), "ipv6")},
	}
	errs := make([]error, len(sites))
	var started sync.WaitGroup
	for i, address := range []string{ironicIPv4Address, ironicIPv6Address} {
		started.Go(func() { errs[i] = sites[i].start(t, address) })
	}
	started.Wait()
	require.NoError(t, errors.Join(errs...))
	return sites[0], sites[1]
}

func (s *site) start(t *testing.T, address string) error {
	t.Helper()
	ctx := context.Background()
	begin := time.Now()
	var err error
	if s.ironic, err = StartIronic(ctx, s.root, filepath.Join(s.work, "ironic"), address); err != nil {
		return fmt.Errorf("the %s site's Ironic: %w", s.name, err)
	}
	t.Cleanup(func() {
		assert.NoError(t, s.ironic.Stop())
		if t.Failed() {
			t.Logf("the end of %s:\n%s", s.ironic.LogPath, fileTail(s.ironic.LogPath, 30))
		}
	})
	t.Logf("the %s site's Ironic 29 answered after %s", s.name, time.Since(begin).Round(time.Millisecond))
	if s.bmc, err = redfishbmc.Start(filepath.Join(s.work, "isos")); err != nil {
		return err
	}
	t.Cleanup(func() { assert.NoError(t, s.bmc.Stop()) })
	relay := net.JoinHostPort(address, strconv.Itoa(ironic.RamdiskAPIPort))
	if s.network, err = ramdiskhost.NewNetwork(ctx, relay, strings.TrimPrefix(s.ironic.URL, "http://")); err != nil {
		return fmt.Errorf("the %s site's provisioning network (hosts boot in network namespaces: this test runs as root): %w", s.name, err)
	}
	t.Cleanup(func() { assert.NoError(t, s.network.Close()) })
	return nil
}

// inspect registers the host as BMO does, starts its inspection and
// returns the node in "inspect wait" with the ISO Ironic inserted.
func (s *site) inspect(t *testing.T, name, mac string, document []byte) (*nodes.Node, *redfishbmc.Media) {
	t.Helper()
	s.registering.Lock()
	begin := time.Now()
	node, err := s.ironic.RegisterAndInspect(context.Background(), ironic.VirtualMediaHost{
		Namespace: "metal3", Name: name, BMCAddress: s.bmc.AddHost(name),
		Username: "admin", Password: "password", BootMACAddress: mac, NetworkData: document,
	})
	s.registering.Unlock()
	require.NoError(t, err)
	t.Logf("%s registered, managed and in %q after %s", name, node.ProvisionState, time.Since(begin).Round(time.Millisecond))
	bmcHost, ok := s.bmc.Host(name)
	require.True(t, ok)
	require.NotNil(t, bmcHost.Media, "ironic inserted no CD into %s", name)
	require.NoError(t, bmcHost.Media.Err)
	t.Logf("%s: the ISO's volume label is %q, its kernel command line: %s", name, bmcHost.Media.VolumeID, KernelCommandLine(bmcHost.Media.KernelParams))
	return node, bmcHost.Media
}

// boot gives the network the routers and boots the host from the ISO's
// network data; it returns what Boot returns.
func (s *site) boot(t *testing.T, name, mac string, routers []string, media *redfishbmc.Media) (*ramdiskhost.Host, error) {
	t.Helper()
	ctx := context.Background()
	for _, router := range routers {
		require.NoError(t, s.network.AddGateway(ctx, router))
	}
	host, err := s.network.AddHost(ctx, name, mac)
	require.NoError(t, err)
	commands, err := host.Boot(ctx, media.NetworkData, filepath.Join(s.work, "cloud-init", name))
	t.Logf("%s applied:\n%s", name, strings.Join(commands, "\n"))
	return host, err
}

func (s *site) startAgent(t *testing.T, host *ramdiskhost.Host, media *redfishbmc.Media) *Agent {
	t.Helper()
	agent, err := StartAgent(context.Background(), s.root, host.Namespace, filepath.Join(s.work, "agent", host.Name), media.KernelParams)
	require.NoError(t, err)
	t.Cleanup(func() {
		agent.Stop()
		if t.Failed() {
			t.Log(agent)
		}
	})
	return agent
}

// expectInspected: the agent, run after the ISO's network data is applied,
// gets the node from "inspect wait" to "manageable", its inventory holds
// the host's static addresses on the NIC with the boot MAC, and it
// heartbeats.
func (s *site) expectInspected(t *testing.T, name, mac string, document []byte, example *ExampleHost) {
	t.Helper()
	ctx := context.Background()
	node, media := s.inspect(t, name, mac, document)
	assert.Equal(t, "config-2", media.VolumeID, "the ISO is a config drive")
	require.JSONEq(t, string(document), string(media.NetworkData))
	host, err := s.boot(t, name, mac, example.Routers, media)
	require.NoError(t, err)

	begin := time.Now()
	agent := s.startAgent(t, host, media)
	node, err = s.ironic.WaitForProvisionState(ctx, node.UUID, nodes.Manageable, InspectionTimeout)
	require.NoError(t, err)
	t.Logf("%s inspected by the agent over %s, %q after %s", name, s.name, node.ProvisionState, time.Since(begin).Round(time.Millisecond))

	inventory, err := s.ironic.Inventory(ctx, node.UUID)
	require.NoError(t, err)
	var addresses []string
	for _, nic := range inventory.Interfaces {
		if strings.EqualFold(nic.MACAddress, mac) {
			addresses = slices.DeleteFunc([]string{nic.IPV4Address, nic.IPV6Address}, notStatic)
		}
	}
	slices.Sort(addresses)
	assert.Equal(t, example.IPs(), addresses, "the inventory's NIC with the boot MAC holds the host's static addresses")

	require.Eventually(t, func() bool {
		node, err = s.ironic.Node(ctx, node.UUID)
		return err == nil && node.DriverInternalInfo["agent_last_heartbeat"] != nil
	}, HeartbeatTimeout, time.Second, "the agent looks the node up and heartbeats")
	assert.True(t, agent.Running(), "the agent keeps running after its heartbeat")
	t.Logf("%s heartbeat after %s, its agent at %v", name, time.Since(begin).Round(time.Millisecond), node.DriverInternalInfo["agent_url"])
}

// notStatic says whether an inventory address is none or the NIC's IPv6
// link-local one (fe80::...%enp1s0), which the kernel gives every NIC.
func notStatic(address string) bool {
	ip, err := netip.ParseAddr(address)
	return err != nil || ip.IsLinkLocalUnicast()
}

// expectNeverReached: booting the host fails with bootError ("" when its
// network data applies), the agent's inventory post fails (it posts a
// second time), the node stays in "inspect wait", and a connection from
// the host to the ISO's ipa-api-url fails with unreachable.
func (s *site) expectNeverReached(t *testing.T, name, mac string, document []byte, routers []string, bootError, unreachable string) {
	t.Helper()
	ctx := context.Background()
	node, media := s.inspect(t, name, mac, document)
	if document == nil {
		assert.Nil(t, media.NetworkData, "the ISO has no network_data.json")
		assert.NotEqual(t, "config-2", media.VolumeID, "without network data the ISO is no config drive")
	} else {
		assert.Equal(t, "config-2", media.VolumeID, "the ISO is a config drive")
		require.JSONEq(t, string(document), string(media.NetworkData))
	}
	host, err := s.boot(t, name, mac, routers, media)
	if bootError == "" {
		require.NoError(t, err)
	} else {
		require.ErrorContains(t, err, bootError)
	}

	begin := time.Now()
	agent := s.startAgent(t, host, media)
	require.NoError(t, agent.WaitForLog(ctx, postAttempt, 2, InspectionTimeout), "the agent's first post fails, so it posts again")
	node, err = s.ironic.Node(ctx, node.UUID)
	require.NoError(t, err)
	assert.Equal(t, string(nodes.InspectWait), node.ProvisionState, "Ironic heard nothing from %s", name)
	t.Logf("%s: the agent posted twice in %s, the node is still %q", name, time.Since(begin).Round(time.Millisecond), node.ProvisionState)
	_, err = host.Lookup(ctx, media.KernelParams["ipa-api-url"])
	assert.ErrorContains(t, err, unreachable)
}
