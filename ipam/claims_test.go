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

package ipam

import (
	"testing"

	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
	"github.com/stretchr/testify/assert"
	"k8s.io/utils/ptr"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/networkdata"
)

func TestClaimName(t *testing.T) {
	// CAPM3 looks up exactly "<bmh>-<pool>" for IP reuse.
	assert.Equal(t, "worker-0-provisioning", ClaimName("worker-0", "provisioning"))
}

func TestAddressOf(t *testing.T) {
	tests := []struct {
		name string
		spec ipamv1.IPAddressSpec
		want networkdata.Address
	}{
		{
			name: "everything",
			spec: ipamv1.IPAddressSpec{
				Address: "192.0.2.10", Prefix: 24, Gateway: ptr.To(ipamv1.IPAddressStr("192.0.2.1")),
				DNSServers: []ipamv1.IPAddressStr{"192.0.2.53", "192.0.2.54"},
			},
			want: networkdata.Address{IP: "192.0.2.10", Prefix: 24, Gateway: "192.0.2.1", DNSServers: []string{"192.0.2.53", "192.0.2.54"}},
		},
		{
			name: "no gateway, no DNS",
			spec: ipamv1.IPAddressSpec{Address: "2001:db8::10", Prefix: 64},
			want: networkdata.Address{IP: "2001:db8::10", Prefix: 64},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, *addressOf(&ipamv1.IPAddress{Spec: tt.spec}))
		})
	}
}

func TestOwnKeys(t *testing.T) {
	tests := []struct {
		name       string
		annotation string
		want       []string
	}{
		{name: "none"},
		{name: "two keys", annotation: `["a-pool","b-pool"]`, want: []string{"a-pool", "b-pool"}},
		{name: "unreadable value removes nothing", annotation: `not json`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pool := &ipamv1.IPPool{}
			if tt.annotation != "" {
				pool.Annotations = map[string]string{preprovv1.PreallocatedForAnnotation: tt.annotation}
			}
			assert.Equal(t, tt.want, ownKeys(pool))
		})
	}
}
