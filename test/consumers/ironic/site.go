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
	"maps"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/nodes"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/capm3-preprov/capm3-preprov/test/consumers/ramdiskhost"
	"github.com/capm3-preprov/capm3-preprov/test/standins/redfishbmc"
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
// (test/consumers/agent), the e2e story (test/e2e) and this package's
// boot test take hosts through it.
type Site struct {
	// Name says which family the ramdisks reach Ironic over ("IPv4").
	Name    string
	Ironic  *Server
	BMC     *redfishbmc.BMC
	Network *ramdiskhost.Network
	// Work is the site's folder: Ironic's files, the ISOs, each host's
	// cloud-init output.
	Work string

	// registering lets one host at a time register and start its
	// inspection: Ironic is one process, and building several ISOs at once
	// on a loaded machine slows its API past the tests' bounds. The agents
	// run side by side.
	registering sync.Mutex
}

// StartSite starts an Ironic 29 in the root whose ramdisks reach it at
// address (Start, its files in work/ironic), then the site around
// it (NewSite). Everything stops at t's cleanup.
func StartSite(t TB, name string, root *Root, address, work string) (*Site, error) {
	t.Helper()
	begin := time.Now()
	server, err := Start(context.Background(), Options{
		Root: root, Dir: filepath.Join(work, "ironic"), LogPath: filepath.Join(work, "ironic.log"), Address: address,
	})
	if err != nil {
		return nil, fmt.Errorf("the %s site's Ironic: %w", name, err)
	}
	t.Cleanup(func() {
		assert.NoError(t, server.Stop())
		if t.Failed() {
			t.Logf("the end of %s:\n%s", server.LogPath, FileTail(server.LogPath, 30))
		}
	})
	t.Logf("the %s site's Ironic 29 answered after %s", name, time.Since(begin).Round(time.Millisecond))
	return NewSite(t, name, server, work)
}

// NewSite starts the BMC stand-in and the provisioning network around a
// running Ironic, relaying its provisioning address to its API; both stop
// at t's cleanup. Network namespaces need root: it fails without.
func NewSite(t TB, name string, server *Server, work string) (*Site, error) {
	t.Helper()
	s := &Site{Name: name, Ironic: server, Work: work}
	var err error
	if s.BMC, err = redfishbmc.Start(filepath.Join(work, "isos")); err != nil {
		return nil, err
	}
	t.Cleanup(func() { assert.NoError(t, s.BMC.Stop()) })
	relay := net.JoinHostPort(server.Address, strconv.Itoa(RamdiskAPIPort))
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
func (s *Site) Inspect(t TB, host VirtualMediaHost) (*nodes.Node, *redfishbmc.Media) {
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
	commands, err := host.Boot(ctx, media.NetworkData, filepath.Join(s.Work, "cloud-init", name))
	t.Logf("%s applied:\n%s", name, strings.Join(commands, "\n"))
	return host, err
}

// KernelCommandLine is the kernel parameters as one line, sorted by name
// (the ISO's order is lost in the map; the agent reads them by name).
func KernelCommandLine(params map[string]string) string {
	fields := make([]string, 0, len(params))
	for _, name := range slices.Sorted(maps.Keys(params)) {
		if params[name] == "" {
			fields = append(fields, name)
			continue
		}
		fields = append(fields, name+"="+params[name])
	}
	return strings.Join(fields, " ")
}
