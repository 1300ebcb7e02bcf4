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

package ipamstandin

import (
	"testing"

	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
	"github.com/stretchr/testify/assert"
	"k8s.io/utils/ptr"
)

func TestAddressName(t *testing.T) {
	pool := &ipamv1.IPPool{Spec: ipamv1.IPPoolSpec{NamePrefix: "provisioning"}}
	assert.Equal(t, "provisioning-192-0-2-10", addressName(pool, "192.0.2.10"))
	assert.Equal(t, "provisioning-2001-db8--10", addressName(pool, "2001:db8::10"))
}

func TestPick(t *testing.T) {
	pool := &ipamv1.IPPool{Spec: ipamv1.IPPoolSpec{
		Pools: []ipamv1.Pool{
			{Start: ptr.To(ipamv1.IPAddressStr("192.0.2.10")), End: ptr.To(ipamv1.IPAddressStr("192.0.2.11"))},
			{Start: ptr.To(ipamv1.IPAddressStr("192.0.2.20")), End: ptr.To(ipamv1.IPAddressStr("192.0.2.20"))},
		},
		PreAllocations: map[string]ipamv1.IPAddressStr{"reserved": "192.0.2.11", "outside": "198.51.100.1"},
	}}
	tests := []struct {
		name  string
		claim string
		used  map[string]bool
		want  ipamv1.IPAddressStr
		found bool
	}{
		{name: "first free", claim: "a", used: map[string]bool{}, want: "192.0.2.10", found: true},
		{name: "next entry when the first is full", claim: "a", used: map[string]bool{"192.0.2.10": true, "192.0.2.11": true}, want: "192.0.2.20", found: true},
		{name: "pre-allocation wins", claim: "reserved", used: map[string]bool{"192.0.2.11": true}, want: "192.0.2.11", found: true},
		{name: "pre-allocation outside the pool", claim: "outside", used: map[string]bool{}, found: false},
		{name: "exhausted", claim: "a", used: map[string]bool{"192.0.2.10": true, "192.0.2.11": true, "192.0.2.20": true}, found: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ip, found := pick(pool, tt.claim, tt.used)
			assert.Equal(t, tt.found, found)
			assert.Equal(t, tt.want, ip)
		})
	}
}
