package networkdata

import (
	"encoding/json"
	"testing"

	capm3 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// wantErr is one expected InputError: its field and parts of its message.
type wantErr struct {
	field    string
	contains []string
}

func TestValidateTemplate(t *testing.T) {
	const eth0 = `{"type": "phy", "id": "eth0"}`
	net4 := func(extra string) string {
		return `{"links": {"ethernets": [` + eth0 + `]}, "networks": {"ipv4": [{"id": "n", "link": "eth0", ` + extra + `}]}}`
	}
	route4 := func(route string) string {
		return net4(`"ipAddressFromIPPool": "v4", "routes": [` + route + `]`)
	}
	route6 := func(route string) string {
		return `{"links": {"ethernets": [` + eth0 + `]}, "networks": {"ipv6DHCP": [{"id": "n", "link": "eth0", "routes": [` + route + `]}]}}`
	}
	tests := []struct {
		name     string
		template string
		want     []wantErr
	}{
		{name: "no network data", template: ``},
		{name: "empty network data", template: `{}`},
		{name: "realistic dual-stack template", template: realisticTemplate},
		{
			name: "host-dependent sources are left to PoolNames",
			template: `{"links": {"ethernets": [
					{"type": "phy", "id": "eth0", "macAddress": {"fromHostInterface": "eno1"}},
					{"type": "phy", "id": "eth1", "macAddress": {"fromHostInterface": "eno2"}},
					{"type": "phy", "id": "eth2", "macAddress": {"fromAnnotation": {"object": "BareMetalHost", "annotation": "mac.example.com/eth2"}}}]},
				"networks": {"ipv4": [{"id": "n", "link": "eth0", "fromPoolAnnotation": {"object": "baremetalhost", "annotation": "pool.example.com/v4"},
					"routes": [{"network": "0.0.0.0", "prefix": 0, "gateway": {"fromPoolAnnotation": {"object": "baremetalhost", "annotation": "pool.example.com/gw"}}}]}]}}`,
		},
		// Structure.
		{
			name:     "duplicate link id across link types",
			template: `{"links": {"ethernets": [` + eth0 + `, {"type": "phy", "id": "eth1"}], "vlans": [{"id": "eth0", "vlanID": 1, "vlanLink": "eth1"}]}}`,
			want: []wantErr{{"spec.networkData.links.vlans[id=eth0].id",
				[]string{`link id "eth0" is also used by spec.networkData.links.ethernets[id=eth0]`, "must be unique"}}},
		},
		{
			name: "duplicate network id",
			template: `{"links": {"ethernets": [` + eth0 + `]}, "networks": {"ipv4DHCP": [{"id": "n", "link": "eth0"}],
				"ipv6SLAAC": [{"id": "n", "link": "eth0"}]}}`,
			want: []wantErr{{"spec.networkData.networks.ipv6SLAAC[id=n].id", []string{`network id "n" is also used`, "must be unique"}}},
		},
		{
			name:     "references to undefined links",
			template: `{"links": {"bonds": [{"id": "bond0", "bondMode": "802.3ad", "bondLinks": ["eth1"]}], "vlans": [{"id": "v1", "vlanID": 1, "vlanLink": "eth2"}]}, "networks": {"ipv4DHCP": [{"id": "n", "link": "eth3"}]}}`,
			want: []wantErr{
				{"spec.networkData.links.bonds[id=bond0].bondLinks[0]", []string{`link "eth1" is not defined`, "define a link with that id"}},
				{"spec.networkData.links.vlans[id=v1].vlanLink", []string{`link "eth2" is not defined`}},
				{"spec.networkData.networks.ipv4DHCP[id=n].link", []string{`link "eth3" is not defined`}},
			},
		},
		{
			name:     "a link without an id is reported for its id only",
			template: `{"links": {"ethernets": [{"type": "phy", "macAddress": {"string": "nope"}}]}}`,
			want:     []wantErr{{"spec.networkData.links.ethernets[0].id", []string{"is empty", "give every link a unique id"}}},
		},
		// MAC sources.
		{
			name:     "invalid MAC string",
			template: `{"links": {"ethernets": [{"type": "phy", "id": "eth0", "macAddress": {"string": "12:34:56:78:9A"}}]}}`,
			want: []wantErr{{"spec.networkData.links.ethernets[id=eth0].macAddress.string",
				[]string{`"12:34:56:78:9A" is not a MAC address`, "six hex pairs"}}},
		},
		{
			name:     "macAddress without a source",
			template: `{"links": {"vlans": [{"id": "v1", "vlanID": 1, "vlanLink": "v2", "macAddress": {}}, {"id": "v2", "vlanID": 2, "vlanLink": "v1"}]}}`,
			want: []wantErr{{"spec.networkData.links.vlans[id=v1].macAddress",
				[]string{"has no source", "set string, fromHostInterface or fromAnnotation"}}},
		},
		{
			name: "MAC from objects that do not exist before provisioning, or at all",
			template: `{"links": {"ethernets": [
				{"type": "phy", "id": "eth0", "macAddress": {"fromAnnotation": {"object": "machine", "annotation": "mac"}}},
				{"type": "phy", "id": "eth1", "macAddress": {"fromAnnotation": {"object": "Metal3Machine", "annotation": "mac"}}},
				{"type": "phy", "id": "eth2", "macAddress": {"fromAnnotation": {"object": "cluster", "annotation": "mac"}}}]}}`,
			want: []wantErr{
				{"spec.networkData.links.ethernets[id=eth0].macAddress.fromAnnotation.object",
					[]string{`"machine" does not exist before provisioning`, "use object baremetalhost", "macAddress.string"}},
				{"spec.networkData.links.ethernets[id=eth1].macAddress.fromAnnotation.object", []string{`"Metal3Machine" does not exist before provisioning`}},
				{"spec.networkData.links.ethernets[id=eth2].macAddress.fromAnnotation.object", []string{`unknown object "cluster"`, "use baremetalhost"}},
			},
		},
		{
			name:     "annotation without a key",
			template: `{"links": {"ethernets": [{"type": "phy", "id": "eth0", "macAddress": {"fromAnnotation": {"object": "baremetalhost"}}}]}}`,
			want:     []wantErr{{"spec.networkData.links.ethernets[id=eth0].macAddress.fromAnnotation.annotation", []string{`annotation "" is missing or empty`}}},
		},
		{
			name:     "vlan without vlanID and bond parameters that clash",
			template: `{"links": {"bonds": [{"id": "bond0", "bondMode": "802.3ad", "parameters": [{"name": "mode", "value": "active-backup"}]}], "vlans": [{"id": "v1", "vlanLink": "bond0"}]}}`,
			want: []wantErr{
				{"spec.networkData.links.bonds[id=bond0].parameters", []string{`"mode" would overwrite`, "use bondMode"}},
				{"spec.networkData.links.vlans[id=v1].vlanID", []string{"is not set", "set the VLAN id"}},
			},
		},
		// Address, gateway and DNS sources.
		{
			name:     "network address from a CAPI IPAM pool",
			template: net4(`"fromPoolRef": {"name": "capi-pool", "apiGroup": "ipam.cluster.x-k8s.io", "kind": "InClusterIPPool"}`),
			want: []wantErr{{"spec.networkData.networks.ipv4[id=n].fromPoolRef",
				[]string{`kind "InClusterIPPool" of apiGroup "ipam.cluster.x-k8s.io"`, "refer to a Metal3 IPPool"}}},
		},
		{
			name:     "route gateway pool from a Machine annotation",
			template: route4(`{"network": "0.0.0.0", "prefix": 0, "gateway": {"fromPoolAnnotation": {"object": "machine", "annotation": "pool"}}}`),
			want: []wantErr{{"spec.networkData.networks.ipv4[id=n].routes[0].gateway.fromPoolAnnotation.object",
				[]string{"does not exist before provisioning", "string, fromIPPool or fromPoolRef"}}},
		},
		{
			name:     "static network without an address source",
			template: net4(`"routes": []`),
			want:     []wantErr{{"spec.networkData.networks.ipv4[id=n]", []string{"has no address source", "set ipAddressFromIPPool, fromPoolRef or fromPoolAnnotation"}}},
		},
		// Prefixes and addresses.
		{
			name:     "IPv4 route prefix 33",
			template: route4(`{"network": "10.0.0.0", "prefix": 33, "gateway": {}}`),
			want:     []wantErr{{"spec.networkData.networks.ipv4[id=n].routes[0].prefix", []string{"33 is not a valid IPv4 prefix length", "use 0-32"}}},
		},
		{
			name:     "IPv6 route prefix 129",
			template: route6(`{"network": "2001:db8::", "prefix": 129, "gateway": {}}`),
			want:     []wantErr{{"spec.networkData.networks.ipv6DHCP[id=n].routes[0].prefix", []string{"129 is not a valid IPv6 prefix length", "use 0-128"}}},
		},
		{
			name: "route addresses of the wrong family or malformed",
			template: route4(`{"network": "2001:db8::", "prefix": 8, "gateway": {"string": "10.0.0.256"},
				"services": {"dns": ["10.0.0.53", "fe80::53%eth0"]}}`),
			want: []wantErr{
				{"spec.networkData.networks.ipv4[id=n].routes[0].network", []string{`"2001:db8::" is not an IPv4 address`, "write it like 192.0.2.1"}},
				{"spec.networkData.networks.ipv4[id=n].routes[0].gateway.string", []string{`"10.0.0.256" is not an IPv4 address`}},
				{"spec.networkData.networks.ipv4[id=n].routes[0].services.dns[1]", []string{`"fe80::53%eth0" is not an IPv4 address`}},
			},
		},
		{
			name:     "IPv6 route on an IPv4 network address",
			template: route6(`{"network": "10.0.0.0", "prefix": 8, "gateway": {}}`),
			want:     []wantErr{{"spec.networkData.networks.ipv6DHCP[id=n].routes[0].network", []string{`"10.0.0.0" is not an IPv6 address`, "2001:db8::1"}}},
		},
		{
			name:     "route network with host bits set",
			template: route4(`{"network": "10.0.0.1", "prefix": 24, "gateway": {}}`),
			want: []wantErr{{"spec.networkData.networks.ipv4[id=n].routes[0].network",
				[]string{`"10.0.0.1" has host bits set for prefix 24`, `use the network address "10.0.0.0", or fix prefix`}}},
		},
		{
			name:     "route network without a prefix is a /0",
			template: route6(`{"network": "2001:DB8::", "gateway": {}}`),
			want: []wantErr{{"spec.networkData.networks.ipv6DHCP[id=n].routes[0].network",
				[]string{"host bits set for prefix 0 (prefix is unset)", `"::"`}}},
		},
		{
			name:     "network addresses in any spelling",
			template: route6(`{"network": "2001:DB8:0::", "prefix": 32, "gateway": {"string": "2001:db8::1"}, "services": {"dns": ["::ffff:192.0.2.53"]}}`),
		},
		{
			name:     "top-level DNS of either family, but valid",
			template: `{"services": {"dns": ["192.0.2.53", "2001:db8::53", "dns.example.com"]}}`,
			want:     []wantErr{{"spec.networkData.services.dns[2]", []string{`"dns.example.com" is not an IP address`, "192.0.2.1 or 2001:db8::1"}}},
		},
		// Many problems at once.
		{
			name: "every problem is reported, in template order",
			template: `{"links": {"ethernets": [
					{"type": "phy", "id": "eth0", "macAddress": {"string": "bad"}},
					{"type": "phy", "id": "eth1", "macAddress": {"fromAnnotation": {"object": "machine", "annotation": "mac"}}}]},
				"networks": {
					"ipv4": [{"id": "n", "link": "eth9", "fromPoolRef": {"name": "p", "apiGroup": "ipam.cluster.x-k8s.io"},
						"routes": [{"network": "10.0.0.0", "prefix": 33, "gateway": {}}, {"network": "10.0.0.1", "prefix": 8, "gateway": {}}]}],
					"ipv4DHCP": [{"id": "n", "link": "eth0"}]}}`,
			want: []wantErr{
				{"spec.networkData.networks.ipv4[id=n].link", []string{`link "eth9" is not defined`}},
				{"spec.networkData.networks.ipv4DHCP[id=n].id", []string{`network id "n" is also used`}},
				{"spec.networkData.links.ethernets[id=eth0].macAddress.string", []string{`"bad" is not a MAC address`}},
				{"spec.networkData.links.ethernets[id=eth1].macAddress.fromAnnotation.object", []string{"does not exist before provisioning"}},
				{"spec.networkData.networks.ipv4[id=n].fromPoolRef", []string{"only Metal3 IPAM IPPools"}},
				{"spec.networkData.networks.ipv4[id=n].routes[0].prefix", []string{"33 is not a valid IPv4 prefix length"}},
				{"spec.networkData.networks.ipv4[id=n].routes[1].network", []string{"host bits set for prefix 8"}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := ValidateTemplate(template(t, tt.template))
			got := make([]string, len(errs))
			for i, err := range errs {
				got[i] = err.Field
				assert.NotContains(t, err.Error(), "\n", "messages go into Events and must be one line")
				assert.ErrorIs(t, err, ErrInvalidInput)
			}
			want := make([]string, len(tt.want))
			for i, w := range tt.want {
				want[i] = w.field
			}
			require.Equal(t, want, got, "fields of %v", errs)
			for i, w := range tt.want {
				for _, s := range w.contains {
					assert.Contains(t, errs[i].Reason, s)
				}
			}
		})
	}
}

// FuzzValidateTemplate checks ValidateTemplate against Render's own checks:
// whatever PoolNames refuses for the most accommodating host is a problem no
// host can fix, so ValidateTemplate must report it too; and a template it
// accepts renders for that host.
func FuzzValidateTemplate(f *testing.F) {
	f.Add(realisticTemplate)
	f.Add(`{}`)
	f.Add(`{"links": {"vlans": [{"id": "v", "vlanLink": "v", "macAddress": {"fromAnnotation": {"object": "machine", "annotation": "a"}}}]},
		"networks": {"ipv6": [{"id": "n", "link": "v", "fromPoolRef": {"name": "p", "apiGroup": "ipam.cluster.x-k8s.io"}}]}}`)
	f.Add(`{"links": {"ethernets": [{"type": "phy", "id": "e", "macAddress": {"fromHostInterface": "eno1"}}, {"type": "phy", "macAddress": {}}],
		"bonds": [{"id": "b", "bondMode": "802.3ad", "bondLinks": ["e", "x"], "parameters": [{"name": "links"}]}]},
		"networks": {"ipv4": [{"id": "n", "link": "b", "routes": [{"network": "10.0.0.1", "prefix": 40, "gateway": {"string": "x"}}]}]},
		"services": {"dns": ["x"]}}`)

	f.Fuzz(func(t *testing.T, ndJSON string) {
		var nd *capm3.NetworkData
		if json.Unmarshal([]byte(ndJSON), &nd) != nil {
			t.Skip("not a template")
		}
		errs := ValidateTemplate(nd)
		for _, err := range errs {
			requireOneLineError(t, err)
			require.Regexp(t, `^spec\.networkData\.`, err.Field)
		}
		if nd == nil {
			return
		}
		_, renderErr := PoolNames(nd, stubHost(nd))
		if renderErr == nil {
			return
		}
		var first *InputError
		require.ErrorAs(t, renderErr, &first)
		require.Contains(t, errs, first, "ValidateTemplate missed what PoolNames refuses for every host")
	})
}
