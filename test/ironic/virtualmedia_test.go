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
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/capm3-preprov/capm3-preprov/test/redfishbmc"
)

// An ethernet host's document, as we render it: one link named by the
// host's boot MAC, a static address and a default route.
const ethernetDocument = `{"links":[{"ethernet_mac_address":"00:5c:52:31:3e:01","id":"enp1s0","mtu":1500,"type":"phy"}],` +
	`"networks":[{"id":"provisioning","ip_address":"192.168.116.100","link":"enp1s0","netmask":"255.255.255.0","network_id":"provisioning",` +
	`"routes":[{"gateway":"192.168.116.1","netmask":"0.0.0.0","network":"0.0.0.0","services":[]}],"type":"ipv4"}],` +
	`"services":[{"address":"192.168.116.53","type":"dns"}]}`

func TestVirtualMediaInspectionBootsTheISOWithTheNetworkData(t *testing.T) {
	ctx := context.Background()
	start := time.Now()
	logs := t.TempDir()
	server, err := Start(ctx, Options{LogPath: filepath.Join(logs, "ironic.log"), VirtualMedia: true})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, server.Stop()) })
	t.Logf("ironic and ironic-inspector answered after %s", time.Since(start).Round(time.Millisecond))
	t.Cleanup(func() {
		if t.Failed() {
			for _, name := range []string{"ironic.log", "ironic-inspector.log"} {
				log, _ := os.ReadFile(filepath.Join(logs, name))
				t.Logf("%s:\n%s", name, log)
			}
		}
	})
	bmc, err := redfishbmc.Start(t.TempDir())
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, bmc.Stop()) })

	start = time.Now()
	node, err := server.RegisterAndInspect(ctx, VirtualMediaHost{
		Namespace: "ns", Name: "worker-0", BMCAddress: bmc.AddHost("worker-0"),
		Username: "admin", Password: "password", BootMACAddress: "00:5c:52:31:3e:01",
		NetworkData: []byte(ethernetDocument),
	})
	require.NoError(t, err)
	t.Logf("registered, managed and inspecting after %s", time.Since(start).Round(time.Millisecond))
	assert.Equal(t, "inspect wait", node.ProvisionState)

	host, ok := bmc.Host("worker-0")
	require.True(t, ok)
	require.NotNil(t, host.Media, "ironic inserted no CD")
	require.NoError(t, host.Media.Err)
	assert.Equal(t, "config-2", host.Media.VolumeID)
	assert.JSONEq(t, ethernetDocument, string(host.Media.NetworkData))
	assert.Equal(t, "http://172.22.0.2:6385", host.Media.KernelParams["ipa-api-url"])
	assert.Equal(t, "vmedia", host.Media.KernelParams["boot_method"])
	assert.NotContains(t, host.Media.KernelParams, "ip")
	assert.Equal(t, "On", host.PowerState)
	assert.Equal(t, "Cd", host.BootTarget)
}
