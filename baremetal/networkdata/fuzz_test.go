package networkdata

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	capm3 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// FuzzRender feeds arbitrary templates, hosts and addresses. Whatever comes
// in, Render must not panic and must return either a one-line error or a
// JSON document with the three lists; PoolNames must refuse what Render
// refuses for the same reason.
func FuzzRender(f *testing.F) {
	f.Add(realisticTemplate, `{"Annotations": {"mac.example.com/eth1": "52:54:00:00:00:02"}, "BootMACAddress": "52:54:00:00:00:01"}`,
		`{"prov-v4": {"IP": "192.168.0.10", "Prefix": 24, "Gateway": "192.168.0.1", "DNSServers": ["192.168.0.53"]}}`)
	f.Add(`null`, `{}`, `{}`)
	f.Add(`{}`, `{"NICs": [{"Name": "eno1", "MAC": "52:54:00:00:00:09"}]}`, `null`)
	f.Add(`{"links": {"ethernets": [{"type": "phy", "id": "eth0", "macAddress": {"fromHostInterface": "eno1"}}],
		"bonds": [{"id": "b", "bondMode": "802.3ad", "bondLinks": ["eth0"], "parameters": [{"name": "miimon", "value": 100}, {"name": "mode"}]}]}}`,
		`{"NICs": [{"Name": "eno1", "MAC": "52:54:00:00:00:09"}]}`, `{}`)
	f.Add(`{"links": {"vlans": [{"id": "v", "vlanLink": "v", "macAddress": {"fromAnnotation": {"object": "machine", "annotation": "a"}}}]},
		"networks": {"ipv6": [{"id": "n", "link": "v", "fromPoolRef": {"name": "p", "apiGroup": "ipam.cluster.x-k8s.io"}}]}}`, `{}`, `{}`)
	f.Add(`{"networks": {"ipv4": [{"id": "n", "link": "e", "fromPoolAnnotation": {"object": "baremetalhost", "annotation": "p"}}]},
		"links": {"ethernets": [{"type": "phy", "id": "e"}]}, "services": {"dnsFromIPPool": "d"}}`,
		`{"Annotations": {"p": "pool"}}`, `{"pool": {"IP": "10.0.0.1", "Prefix": 99}}`)

	f.Fuzz(func(t *testing.T, ndJSON, hostJSON, addressesJSON string) {
		var nd *capm3.NetworkData
		var host Host
		var addresses map[string]Address
		if json.Unmarshal([]byte(ndJSON), &nd) != nil || json.Unmarshal([]byte(hostJSON), &host) != nil ||
			json.Unmarshal([]byte(addressesJSON), &addresses) != nil {
			t.Skip("not a template, host or address set")
		}

		names, poolErr := PoolNames(nd, host)
		if poolErr == nil {
			// Give every pool an address, as the caller does before Render.
			if addresses == nil {
				addresses = map[string]Address{}
			}
			for _, name := range names {
				if _, ok := addresses[name]; !ok {
					addresses[name] = Address{IP: "192.0.2.1", Prefix: 24}
				}
			}
		}

		out, err := Render(nd, host, addresses)
		if poolErr != nil {
			requireOneLineError(t, poolErr)
			require.Error(t, err, "Render accepted what PoolNames refused: %v", poolErr)
			assert.Equal(t, poolErr.Error(), err.Error())
			return
		}
		if err != nil {
			requireOneLineError(t, err)
			assert.False(t, errors.Is(err, ErrMissingAddress), "every pool PoolNames named had an address: %v", err)
			return
		}

		var doc map[string]any
		require.NoError(t, json.Unmarshal(out, &doc), "invalid JSON: %s", out)
		for _, key := range []string{"links", "networks", "services"} {
			require.IsType(t, []any{}, doc[key], "%s must be a list in %s", key, out)
		}
		again, err := Render(nd, host, addresses)
		require.NoError(t, err)
		require.True(t, bytes.Equal(out, again), "output is not deterministic")
	})
}

func requireOneLineError(t *testing.T, err error) {
	t.Helper()
	require.NotEmpty(t, err.Error())
	require.NotContains(t, err.Error(), "\n")
}
