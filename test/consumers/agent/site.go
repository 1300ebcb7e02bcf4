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
	"net"
	"net/netip"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/nodes"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/capm3-preprov/capm3-preprov/test/consumers/ironic"
	"github.com/capm3-preprov/capm3-preprov/test/consumers/ramdiskhost"
	"github.com/capm3-preprov/capm3-preprov/test/standins/redfishbmc"
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
)

// TB is what a site reports to: a *testing.T, or Ginkgo's GinkgoT().
type TB interface {
	require.TestingT
	Helper()
	Logf(format string, args ...any)
	Cleanup(func())
	Failed() bool
}

// Site is one Ironic 29 whose API the ramdisks reach at one address of the
// provisioning network, the Redfish stand-in that plays the hosts' BMCs,
// and the provisioning network: a relay at that address to Ironic on
// loopback, and the hosts' routers. The inspection test
// (inspection_test.go) and the e2e story (test/e2e) take hosts through
// inspection with it.
type Site struct {
	// Name says which family the ramdisks reach Ironic over ("IPv4").
	Name    string
	Ironic  *ironic.Server
	BMC     *redfishbmc.BMC
	Network *ramdiskhost.Network

	work string
	// registering lets one host at a time register and start its
	// inspection: Ironic is one process, and building several ISOs at once
	// on a loaded machine slows its API past the tests' bounds. The agents
	// run side by side.
	registering sync.Mutex
}

// StartSite starts an Ironic 29 in the root whose ramdisks reach it at
// address (ironic.Start, its files in work/ironic), then the site around
// it (NewSite). Everything stops at t's cleanup.
func StartSite(t TB, name string, root *ironic.Root, address, work string) (*Site, error) {
	t.Helper()
	begin := time.Now()
	server, err := ironic.Start(context.Background(), ironic.Options{
		Root: root, Dir: filepath.Join(work, "ironic"), LogPath: filepath.Join(work, "ironic.log"), Address: address,
	})
	if err != nil {
		return nil, fmt.Errorf("the %s site's Ironic: %w", name, err)
	}
	t.Cleanup(func() {
		assert.NoError(t, server.Stop())
		if t.Failed() {
			t.Logf("the end of %s:\n%s", server.LogPath, ironic.FileTail(server.LogPath, 30))
		}
	})
	t.Logf("the %s site's Ironic 29 answered after %s", name, time.Since(begin).Round(time.Millisecond))
	return NewSite(t, name, server, work)
}

// NewSite starts the BMC stand-in and the provisioning network around a
// running Ironic, relaying its provisioning address to its API; both stop
// at t's cleanup. Network namespaces need root: it fails without.
func NewSite(t TB, name string, server *ironic.Server, work string) (*Site, error) {
	t.Helper()
	s := &Site{Name: name, Ironic: server, work: work}
	var err error
	if s.BMC, err = redfishbmc.Start(filepath.Join(work, "isos")); err != nil {
		return nil, err
	}
	t.Cleanup(func() { assert.NoError(t, s.BMC.Stop()) })
	relay := net.JoinHostPort(server.Address, strconv.Itoa(ironic.RamdiskAPIPort))
	if s.Network, err = ramdiskhost.NewNetwork(context.Background(), relay, strings.TrimPrefix(server.URL, "http://")); err != nil {
		return nil, fmt.Errorf("the %s site's provisioning network (hosts boot in network namespaces: the tests run as root): %w", name, err)
	}
	t.Cleanup(func() { assert.NoError(t, s.Network.Close()) })
	return s, nil
}

// Inspect registers the host as BMO does (its node named
// <namespace>~<name>, with the credentials and network data it is given;
// the BMC address is the site's stand-in's), starts its inspection and
// returns the node in "inspect wait" with the ISO Ironic inserted.
func (s *Site) Inspect(t TB, host ironic.VirtualMediaHost) (*nodes.Node, *redfishbmc.Media) {
	t.Helper()
	bmcName := host.Namespace + "-" + host.Name
	host.BMCAddress = s.BMC.AddHost(bmcName)
	s.registering.Lock()
	begin := time.Now()
	node, err := s.Ironic.RegisterAndInspect(context.Background(), host)
	s.registering.Unlock()
	require.NoError(t, err)
	t.Logf("%s registered, managed and in %q after %s", host.Name, node.ProvisionState, time.Since(begin).Round(time.Millisecond))
	bmcHost, ok := s.BMC.Host(bmcName)
	require.True(t, ok)
	require.NotNil(t, bmcHost.Media, "ironic inserted no CD into %s", host.Name)
	require.NoError(t, bmcHost.Media.Err)
	t.Logf("%s: the ISO's volume label is %q, its kernel command line: %s", host.Name, bmcHost.Media.VolumeID, KernelCommandLine(bmcHost.Media.KernelParams))
	return node, bmcHost.Media
}

// Boot gives the network the routers (addresses with their prefix, from
// the host's pools and never from its document) and boots the host from
// the ISO's network data; it returns what Boot returns.
func (s *Site) Boot(t TB, name, mac string, routers []string, media *redfishbmc.Media) (*ramdiskhost.Host, error) {
	t.Helper()
	ctx := context.Background()
	for _, router := range routers {
		require.NoError(t, s.Network.AddGateway(ctx, router))
	}
	host, err := s.Network.AddHost(ctx, name, mac)
	require.NoError(t, err)
	commands, err := host.Boot(ctx, media.NetworkData, filepath.Join(s.work, "cloud-init", name))
	t.Logf("%s applied:\n%s", name, strings.Join(commands, "\n"))
	return host, err
}

// StartAgent runs the real agent in the host's namespace with the ISO's
// kernel parameters; it stops at t's cleanup, which shows its log after a
// failure.
func (s *Site) StartAgent(t TB, host *ramdiskhost.Host, media *redfishbmc.Media) *Agent {
	t.Helper()
	agent, err := StartAgent(context.Background(), s.Ironic.Root, host.Namespace, filepath.Join(s.work, "agent", host.Name), media.KernelParams)
	require.NoError(t, err)
	t.Cleanup(func() {
		agent.Stop()
		if t.Failed() {
			t.Logf("%s: %s", host.Name, agent)
		}
	})
	return agent
}

// Inspection is one host on its way through inspection at a site.
type Inspection struct {
	Name, MAC string
	Node      *nodes.Node
	Agent     *Agent
	site      *Site
	begin     time.Time
}

// BeginInspection takes a host as far as its agent: Inspect, then the ISO
// must be a config drive (volume label config-2) carrying document, then
// Boot (which must apply it) and StartAgent. Several hosts' agents run
// side by side; ExpectInspected waits for each.
func (s *Site) BeginInspection(t TB, host ironic.VirtualMediaHost, routers []string) *Inspection {
	t.Helper()
	node, media := s.Inspect(t, host)
	assert.Equal(t, "config-2", media.VolumeID, "the ISO of %s is a config drive", host.Name)
	require.JSONEq(t, string(host.NetworkData), string(media.NetworkData), "the ISO of %s carries its network data", host.Name)
	booted, err := s.Boot(t, host.Name, host.BootMACAddress, routers, media)
	require.NoError(t, err)
	return &Inspection{Name: host.Name, MAC: host.BootMACAddress, Node: node, Agent: s.StartAgent(t, booted, media), site: s, begin: time.Now()}
}

// ExpectInspected: the agent gets the node from "inspect wait" to
// "manageable", the inventory it posted holds exactly ips (the host's
// static addresses) on the NIC with the boot MAC, and it heartbeats.
func (i *Inspection) ExpectInspected(t TB, ips []string) {
	t.Helper()
	ctx := context.Background()
	node, err := i.site.Ironic.WaitForProvisionState(ctx, i.Node.UUID, nodes.Manageable, InspectionTimeout)
	require.NoError(t, err, "the agent of %s", i.Name)
	// Ironic's own time of the change: hosts are waited for one by one,
	// while their agents run side by side.
	t.Logf("%s inspected by the agent over %s, %q %s after the agent started", i.Name, i.site.Name, node.ProvisionState,
		node.ProvisionUpdatedAt.Sub(i.begin).Round(time.Millisecond))

	inventory, err := i.site.Ironic.Inventory(ctx, node.UUID)
	require.NoError(t, err)
	var addresses []string
	for _, nic := range inventory.Interfaces {
		if strings.EqualFold(nic.MACAddress, i.MAC) {
			addresses = slices.DeleteFunc([]string{nic.IPV4Address, nic.IPV6Address}, notStatic)
		}
	}
	slices.Sort(addresses)
	want := slices.Sorted(slices.Values(ips))
	assert.Equal(t, want, addresses, "the inventory's NIC with the boot MAC of %s holds the host's static addresses", i.Name)

	require.Eventually(t, func() bool {
		node, err = i.site.Ironic.ReadNode(ctx, node.UUID)
		return err == nil && node.DriverInternalInfo["agent_last_heartbeat"] != nil
	}, HeartbeatTimeout, time.Second, "the agent of %s looks the node up and heartbeats", i.Name)
	assert.True(t, i.Agent.Running(), "the agent of %s keeps running after its heartbeat", i.Name)
	t.Logf("%s heartbeat seen %s after the agent started, its agent at %v", i.Name, time.Since(i.begin).Round(time.Millisecond), node.DriverInternalInfo["agent_url"])
}

// notStatic says whether an inventory address is none or the NIC's IPv6
// link-local one (fe80::...%enp1s0), which the kernel gives every NIC.
func notStatic(address string) bool {
	ip, err := netip.ParseAddr(address)
	return err != nil || ip.IsLinkLocalUnicast()
}
