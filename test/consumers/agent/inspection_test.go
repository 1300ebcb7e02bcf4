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
	"path/filepath"
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
)

// postAttempt is what the agent logs each time it posts its inventory; it
// posts again only after a connection error or a 5xx or 409.
const postAttempt = "Posting collected data to"

func TestTheAgentInspectsHostsWithoutDHCP(t *testing.T) {
	t.Parallel()
	root, err := ironic.FindRoot(context.Background())
	require.NoError(t, err)
	ipv4, ipv6 := startSites(t, root)

	rackA1 := loadExampleHost(t, "preprovisioning-template", "rack-a1-0", "rack-a1", 0)
	ipv6Only := loadExampleHost(t, "ipv6", "ipv6-0", "ipv6-only", 0)
	dualStack := loadExampleHost(t, "ipv6", "dual-stack-0", "dual-stack", 2)

	t.Run("an IPv4 host, over IPv4", func(t *testing.T) {
		t.Parallel()
		document := render(t, rackA1, rackA1.RendererHost(), rackA1.Addresses)
		expectReachCheck(t, ipv4, document, "")
		expectInspected(t, ipv4, rackA1, document)
	})
	t.Run("an IPv6-only host, over IPv6", func(t *testing.T) {
		t.Parallel()
		document := render(t, ipv6Only, ipv6Only.RendererHost(), ipv6Only.Addresses)
		expectReachCheck(t, ipv6, document, "")
		expectInspected(t, ipv6, ipv6Only, document)
	})
	for _, site := range []*Site{ipv4, ipv6} {
		t.Run("a dual-stack host, over "+site.Name, func(t *testing.T) {
			t.Parallel()
			document := render(t, dualStack, dualStack.RendererHost(), dualStack.Addresses)
			expectReachCheck(t, site, document, "")
			expectInspected(t, site, dualStack, document)
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
		expectNeverReached(t, ipv4, host.Name, host.BootMACAddress, nil, rackA1.Routers, ramdiskhost.ErrNoNetworkData.Error(), "network is unreachable")
	})
	t.Run("a document whose link has another MAC leaves the NIC unconfigured", func(t *testing.T) {
		t.Parallel()
		host, addresses := negative(2, "00:5c:52:31:3b:f2")
		other := host
		other.BootMACAddress = "00:5c:52:31:3b:f9"
		// cloud-init refuses a physical link without a NIC of its MAC.
		expectNeverReached(t, ipv4, host.Name, host.BootMACAddress, render(t, rackA1, other, addresses), rackA1.Routers, "Unable to find a system nic", "network is unreachable")
	})
	t.Run("a document with another gateway than the network's router leaves the host without a way out", func(t *testing.T) {
		t.Parallel()
		host, addresses := negative(3, "00:5c:52:31:3b:f3")
		wrong := addresses["rack-a1-provisioning"]
		wrong.Gateway = "192.168.112.254"
		addresses["rack-a1-provisioning"] = wrong
		// The gateway is on the host's subnet, so its route is made; no
		// router answers for that address.
		expectNeverReached(t, ipv4, host.Name, host.BootMACAddress, render(t, rackA1, host, addresses), rackA1.Routers, "", "no route to host")
	})
	t.Run("a document with a prefix that leaves the gateway off the host's subnet gives it no default route", func(t *testing.T) {
		t.Parallel()
		host, addresses := negative(4, "00:5c:52:31:3b:f4")
		wrong := addresses["rack-a1-provisioning"]
		wrong.Prefix = 28 // 192.168.112.96/28 does not hold the gateway 192.168.112.1
		addresses["rack-a1-provisioning"] = wrong
		document := render(t, rackA1, host, addresses)
		expectReachCheck(t, ipv4, document, "which is on no subnet")
		expectNeverReached(t, ipv4, host.Name, host.BootMACAddress, document, rackA1.Routers, "Nexthop has invalid gateway", "network is unreachable")
	})
	// What the manager's --ramdisk-endpoints check (issue 35 item 6, BMO
	// issue 1664) keeps paused: data without an address of Ironic's family.
	t.Run("an IPv6-only host whose Ironic is on IPv4 never reaches it, as the manager's check says", func(t *testing.T) {
		t.Parallel()
		host := ipv6Only.RendererHost()
		host.Name, host.BootMACAddress = "ipv6-1", "00:5c:52:31:3b:f5"
		document := render(t, ipv6Only, host, ipv6Only.Addresses)
		expectReachCheck(t, ipv4, document, "no IPv4")
		expectNeverReached(t, ipv4, host.Name, host.BootMACAddress, document, rackA1.Routers, "", "network is unreachable")
	})
}

// expectReachCheck runs the manager's check of a rendered document against
// the site's Ironic: it finds no fault (why empty), or one that says why.
func expectReachCheck(t *testing.T, s *Site, document []byte, why string) {
	t.Helper()
	endpoint, err := networkdata.ParseEndpoint("http://" + net.JoinHostPort(s.Ironic.Address, strconv.Itoa(ironic.RamdiskAPIPort)))
	require.NoError(t, err)
	unreached, err := networkdata.Unreachable(document, []networkdata.Endpoint{endpoint})
	require.NoError(t, err)
	if why == "" {
		assert.Empty(t, unreached, "the check finds a way to %s's Ironic", s.Name)
		return
	}
	require.Len(t, unreached, 1, "the check finds no way to %s's Ironic", s.Name)
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

// startSites starts the IPv4 and the IPv6 site side by side (each Ironic
// takes half a minute to answer on a quiet machine).
func startSites(t *testing.T, root *ironic.Root) (ipv4, ipv6 *Site) {
	t.Helper()
	names := []string{"IPv4", "IPv6"}
	addresses := []string{ironic.ProvisioningAddress, ironic.ProvisioningIPv6Address}
	sites := make([]*Site, len(names))
	errs := make([]error, len(names))
	var started sync.WaitGroup
	for i := range names {
		started.Go(func() {
			sites[i], errs[i] = StartSite(t, names[i], root, addresses[i], filepath.Join(t.TempDir(), strings.ToLower(names[i])))
		})
	}
	started.Wait()
	require.NoError(t, errors.Join(errs...))
	return sites[0], sites[1]
}

// expectInspected takes an example host through inspection at the site:
// its agent, run after the ISO's network data is applied, gets the node to
// "manageable" with the host's static addresses in its inventory.
func expectInspected(t *testing.T, s *Site, host *ExampleHost, document []byte) {
	t.Helper()
	s.BeginInspection(t, bmoHost(host.Name, host.BootMACAddress, document), host.Routers).ExpectInspected(t, host.IPs())
}

// bmoHost is what BMO hands Ironic of a host of namespace metal3 (the
// examples' BMC credentials; the site's stand-in plays the BMC).
func bmoHost(name, mac string, document []byte) ironic.VirtualMediaHost {
	return ironic.VirtualMediaHost{Namespace: "metal3", Name: name, Username: "admin", Password: "password", BootMACAddress: mac, NetworkData: document}
}

// expectNeverReached: booting the host fails with bootError ("" when its
// network data applies), the agent's inventory post fails (it posts a
// second time), the node stays in "inspect wait", and a connection from
// the host to the ISO's ipa-api-url fails with unreachable.
func expectNeverReached(t *testing.T, s *Site, name, mac string, document []byte, routers []string, bootError, unreachable string) {
	t.Helper()
	ctx := context.Background()
	node, media := s.Inspect(t, bmoHost(name, mac, document))
	if document == nil {
		assert.Nil(t, media.NetworkData, "the ISO has no network_data.json")
		assert.NotEqual(t, "config-2", media.VolumeID, "without network data the ISO is no config drive")
	} else {
		assert.Equal(t, "config-2", media.VolumeID, "the ISO is a config drive")
		require.JSONEq(t, string(document), string(media.NetworkData))
	}
	host, err := s.Boot(t, name, mac, routers, media)
	if bootError == "" {
		require.NoError(t, err)
	} else {
		require.ErrorContains(t, err, bootError)
	}

	begin := time.Now()
	agent := s.StartAgent(t, host, media)
	require.NoError(t, agent.WaitForLog(ctx, postAttempt, 2, InspectionTimeout), "the agent's first post fails, so it posts again")
	node, err = s.Ironic.ReadNode(ctx, node.UUID)
	require.NoError(t, err)
	assert.Equal(t, string(nodes.InspectWait), node.ProvisionState, "Ironic heard nothing from %s", name)
	t.Logf("%s: the agent posted twice in %s, the node is still %q", name, time.Since(begin).Round(time.Millisecond), node.ProvisionState)
	_, err = host.Lookup(ctx, media.KernelParams["ipa-api-url"])
	assert.ErrorContains(t, err, unreachable)
}
