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

package capiipamstandin

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	inclusterv1alpha2 "github.com/capm3-preprov/capm3-preprov/test/standins/capiipamstandin/v1alpha2"
)

// What a pool gives, in the order it gives it, as the provider's poolutil
// reads spec.addresses.
func TestPoolAddresses(t *testing.T) {
	tests := []struct {
		name  string
		spec  inclusterv1alpha2.InClusterIPPoolSpec
		inUse []string
		// want is the lowest free address, "" for none.
		want  string
		count int
	}{{
		name:  "a CIDR without its network and broadcast addresses",
		spec:  inclusterv1alpha2.InClusterIPPoolSpec{Addresses: []string{"192.0.2.0/30"}, Prefix: 30},
		want:  "192.0.2.1",
		count: 2,
	}, {
		name:  "allocateReservedIPAddresses gives them too",
		spec:  inclusterv1alpha2.InClusterIPPoolSpec{Addresses: []string{"192.0.2.0/30"}, Prefix: 30, AllocateReservedIPAddresses: true},
		want:  "192.0.2.0",
		count: 4,
	}, {
		name:  "the reserved addresses are the prefix's around the lowest address",
		spec:  inclusterv1alpha2.InClusterIPPoolSpec{Addresses: []string{"192.0.2.0-192.0.2.3", "192.0.2.255"}, Prefix: 24},
		want:  "192.0.2.1",
		count: 3,
	}, {
		name:  "the gateway and excluded addresses are never given",
		spec:  inclusterv1alpha2.InClusterIPPoolSpec{Addresses: []string{"192.0.2.10-192.0.2.20"}, Prefix: 24, Gateway: "192.0.2.10", ExcludedAddresses: []string{"192.0.2.11", "192.0.2.12/31"}},
		want:  "192.0.2.14",
		count: 7,
	}, {
		name:  "the lowest address no IPAddress holds, across ranges",
		spec:  inclusterv1alpha2.InClusterIPPoolSpec{Addresses: []string{"192.0.2.20", "192.0.2.10-192.0.2.11"}, Prefix: 24},
		inUse: []string{"192.0.2.10", "192.0.2.11"},
		want:  "192.0.2.20",
		count: 3,
	}, {
		name:  "exhausted",
		spec:  inclusterv1alpha2.InClusterIPPoolSpec{Addresses: []string{"192.0.2.10"}, Prefix: 24},
		inUse: []string{"192.0.2.10"},
		count: 1,
	}, {
		name:  "IPv6 leaves out the anycast address only",
		spec:  inclusterv1alpha2.InClusterIPPoolSpec{Addresses: []string{"2001:db8::/126"}, Prefix: 126},
		want:  "2001:db8::1",
		count: 3,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set, err := poolAddresses(&tt.spec)
			require.NoError(t, err)
			assert.Equal(t, tt.count, set.count())
			used := map[netip.Addr]bool{}
			for _, addr := range tt.inUse {
				used[netip.MustParseAddr(addr)] = true
			}
			free, found := set.lowestFree(used)
			assert.Equal(t, tt.want != "", found)
			if found {
				assert.Equal(t, tt.want, free.String())
			}
		})
	}
}

func TestPoolAddressesRefusesWhatItCannotRead(t *testing.T) {
	for _, spec := range []inclusterv1alpha2.InClusterIPPoolSpec{
		{Addresses: []string{"192.0.2.300"}, Prefix: 24},
		{Addresses: []string{"192.0.2.20-192.0.2.10"}, Prefix: 24},
		{Addresses: []string{"192.0.2.10-2001:db8::1"}, Prefix: 24},
		{Addresses: []string{"192.0.2.10"}, Prefix: 33},
		{Addresses: []string{"192.0.2.10"}, Prefix: 24, Gateway: "gateway"},
	} {
		_, err := poolAddresses(&spec)
		assert.Error(t, err, spec.Addresses)
	}
}
