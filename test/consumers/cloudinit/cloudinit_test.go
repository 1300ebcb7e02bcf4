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

package cloudinit

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// bonded has every kind of link and network the renderer writes: two
// NICs (one MAC in upper case), an LACP bond with scalar parameters, a VLAN
// on it with a static IPv4 address, a default and a static route, a static
// IPv6 address on a NIC, and a DNS server.
const bonded = `{
  "links": [
    {"id": "eno1", "type": "phy", "mtu": 9000, "ethernet_mac_address": "00:5C:52:31:3C:01"},
    {"id": "eno2", "type": "phy", "mtu": 9000, "ethernet_mac_address": "00:5c:52:31:3c:02"},
    {"id": "bond0", "type": "bond", "mtu": 9000, "ethernet_mac_address": "00:5c:52:31:3c:01",
     "bond_mode": "802.3ad", "bond_links": ["eno1", "eno2"], "bond_xmit_hash_policy": "layer3+4",
     "bond_miimon": 100, "bond_lacp_rate": "fast"},
    {"id": "vlan100", "type": "vlan", "mtu": 1500, "vlan_link": "bond0", "vlan_id": 100, "vlan_mac_address": "00:5c:52:31:3c:01"},
    {"id": "eno3", "type": "phy", "ethernet_mac_address": "00:5c:52:31:3c:03"}
  ],
  "networks": [
    {"id": "provisioning", "network_id": "provisioning", "type": "ipv4", "link": "vlan100",
     "ip_address": "192.168.114.100", "netmask": "255.255.255.0",
     "routes": [
       {"network": "0.0.0.0", "netmask": "0.0.0.0", "gateway": "192.168.114.1", "services": []},
       {"network": "10.20.0.0", "netmask": "255.255.0.0", "gateway": "192.168.114.254", "services": []}
     ]},
    {"id": "v6", "network_id": "v6", "type": "ipv6", "link": "eno3",
     "ip_address": "2001:db8::10", "netmask": "ffff:ffff:ffff:ffff::",
     "routes": [{"network": "::", "netmask": "::", "gateway": "2001:db8::1", "services": []}]}
  ],
  "services": [{"type": "dns", "address": "192.168.114.53"}]
}`

func TestCheckAcceptsWhatCloudInitApplies(t *testing.T) {
	t.Parallel()
	start := time.Now()
	require.NoError(t, Check(context.Background(), []byte(bonded), t.TempDir()))
	t.Logf("net-convert and the check took %s", time.Since(start).Round(time.Millisecond))
}

func TestNetplanOfABondedVLAN(t *testing.T) {
	t.Parallel()
	plan, err := ToNetplan(context.Background(), []byte(bonded), t.TempDir())
	require.NoError(t, err)
	bond := plan.Network.Bonds["bond0"]
	assert.Equal(t, []string{"eno1", "eno2"}, bond.Interfaces)
	assert.Equal(t, map[string]any{"mode": "802.3ad", "transmit-hash-policy": "layer3+4",
		"mii-monitor-interval": float64(100), "lacp-rate": "fast"}, bond.Parameters)
	vlan := plan.Network.VLANs["bond0.100"]
	assert.Equal(t, 100, vlan.ID)
	assert.Equal(t, "bond0", vlan.Link)
	assert.Equal(t, []string{"192.168.114.100/24"}, vlan.Addresses)
	assert.Equal(t, []string{"192.168.114.53"}, vlan.Nameservers.Addresses)
}

// The check must fail where cloud-init would not do what the document
// says, and where the netplan differs from the document.
func TestCheckReportsWhatIsNotApplied(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("bond parameters as an object are dropped", func(t *testing.T) {
		t.Parallel()
		withOptions := replace(t, bonded, `"bond_miimon": 100, "bond_lacp_rate": "fast"`, `"bond_options": {"miimon": 100, "lacp_rate": "fast"}`)
		err := Check(ctx, []byte(withOptions), t.TempDir())
		assert.ErrorContains(t, err, "bond bond0: bond_options=map[lacp_rate:fast miimon:100] is dropped by cloud-init")
	})

	t.Run("a netplan that differs from the document", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		plan, err := ToNetplan(ctx, []byte(bonded), dir)
		require.NoError(t, err)
		vlan := plan.Network.VLANs["bond0.100"]
		vlan.Addresses = []string{"192.168.114.100/16"}
		vlan.Routes = vlan.Routes[:1]
		vlan.Nameservers.Addresses = nil
		plan.Network.VLANs["bond0.100"] = vlan
		bond := plan.Network.Bonds["bond0"]
		bond.Interfaces = []string{"eno1"}
		bond.Parameters = map[string]any{"mode": "802.3ad", "transmit-hash-policy": "layer3+4", "mii-monitor-interval": 200}
		plan.Network.Bonds["bond0"] = bond
		delete(plan.Network.Ethernets, "eno3")

		problems, err := compare(ctx, []byte(bonded), plan, dir)
		require.NoError(t, err)
		assert.ElementsMatch(t, []string{
			"bond bond0: interfaces [eno1], want [eno1 eno2]",
			"bond bond0: parameter mii-monitor-interval is 200, want 100 (from bond_miimon)",
			"bond bond0: parameter lacp-rate is <nil>, want fast (from bond_lacp_rate)",
			"network provisioning: bond0.100 has addresses [192.168.114.100/16], want 192.168.114.100/24",
			"network provisioning: bond0.100 has routes [{To:0.0.0.0/0 Via:192.168.114.1}], want to 10.20.0.0/16 via 192.168.114.254",
			"bond0.100: nameservers [], want [192.168.114.53]",
			`link eno3: no ethernets "eno3" in netplan`,
			`link eno3: no ethernets "eno3" in netplan`,
			"netplan has 4 devices for 5 links",
		}, problems)
	})
}

// With no static address, netplan has no place for DNS servers; they are
// looked for in cloud-init's systemd-networkd output.
func TestDNSWithoutStaticAddress(t *testing.T) {
	t.Parallel()
	slaac := `{
  "links": [{"id": "enp1s0", "type": "phy", "ethernet_mac_address": "52:54:00:aa:00:01"}],
  "networks": [{"id": "slaac", "network_id": "slaac", "type": "ipv6_slaac", "link": "enp1s0"}],
  "services": [{"type": "dns", "address": "2001:db8::53"}]
}`
	dir := t.TempDir()
	require.NoError(t, Check(context.Background(), []byte(slaac), dir))
	servers, err := networkdDNS(context.Background(), []byte(slaac), filepath.Join(dir, "again"))
	require.NoError(t, err)
	assert.Equal(t, []string{"2001:db8::53"}, servers)
}

func TestPrefixed(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ address, netmask, want string }{
		{"192.168.1.10", "255.255.255.0", "192.168.1.10/24"},
		{"0.0.0.0", "0.0.0.0", "0.0.0.0/0"},
		{"2001:db8::10", "ffff:ffff:ffff:ffff::", "2001:db8::10/64"},
		{"::", "::", "::/0"},
	} {
		prefix, err := prefixed(tc.address, tc.netmask)
		require.NoError(t, err)
		assert.Equal(t, tc.want, prefix.String())
	}
	for _, bad := range [][2]string{{"192.168.1.10", "255.0.255.0"}, {"192.168.1.10", ""}, {"192.168.1.10", "ffff::"}} {
		_, err := prefixed(bad[0], bad[1])
		assert.Error(t, err, "%v", bad)
	}
}

func replace(t *testing.T, text, old, replacement string) string {
	t.Helper()
	require.Contains(t, text, old)
	return strings.Replace(text, old, replacement, 1)
}
