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
	"net/netip"
	"path/filepath"
	"slices"
	"strings"
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

// Site is an Ironic site (ironic.Site) where the real agent runs in each
// booted host.
type Site struct {
	*ironic.Site
}

// StartSite starts an Ironic site (ironic.StartSite) for the agent.
func StartSite(t ironic.TB, name string, root *ironic.Root, address, work string) (*Site, error) {
	site, err := ironic.StartSite(t, name, root, address, work)
	return &Site{Site: site}, err
}

// NewSite makes an Ironic site around a running Ironic (ironic.NewSite)
// for the agent.
func NewSite(t ironic.TB, name string, server *ironic.Server, work string) (*Site, error) {
	site, err := ironic.NewSite(t, name, server, work)
	return &Site{Site: site}, err
}

// StartAgent runs the real agent in the host's namespace with the ISO's
// kernel parameters; it stops at t's cleanup, which shows its log after a
// failure.
func (s *Site) StartAgent(t ironic.TB, host *ramdiskhost.Host, media *redfishbmc.Media) *Agent {
	t.Helper()
	agent, err := StartAgent(context.Background(), s.Ironic.Root, host.Namespace, filepath.Join(s.Work, "agent", host.Name), media.KernelParams)
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
func (s *Site) BeginInspection(t ironic.TB, host ironic.VirtualMediaHost, routers []string) *Inspection {
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
func (i *Inspection) ExpectInspected(t ironic.TB, ips []string) {
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
