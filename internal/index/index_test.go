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

package index

import (
	"testing"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestHostPausedForUs(t *testing.T) {
	tests := []struct {
		name        string
		annotations map[string]string
		want        []string
	}{
		{name: "not paused"},
		{name: "paused for us", annotations: map[string]string{"baremetalhost.metal3.io/paused": "metal3.io/preprovisioning"}, want: []string{"true"}},
		{name: "paused by CAPM3", annotations: map[string]string{"baremetalhost.metal3.io/paused": "metal3.io/capm3"}},
		{name: "paused with no value", annotations: map[string]string{"baremetalhost.metal3.io/paused": ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			host := &bmov1alpha1.BareMetalHost{ObjectMeta: metav1.ObjectMeta{Name: "node-0", Annotations: tt.annotations}}
			assert.Equal(t, tt.want, hostPausedForUs(host))
		})
	}
}

// Only an address its claim no longer owns is indexed: the garbage
// collector drops the owner reference of a claim that is gone, whatever
// its UID was.
func TestUnownedAddressClaim(t *testing.T) {
	claimRef := func(apiVersion, kind, name string) metav1.OwnerReference {
		return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, UID: "uid"}
	}
	poolRef := claimRef(ipamv1.GroupVersion.String(), "IPPool", "provisioning")
	tests := []struct {
		name   string
		owners []metav1.OwnerReference
		want   []string
	}{
		{name: "left behind: only the pool owns it", owners: []metav1.OwnerReference{poolRef}, want: []string{"node-0-provisioning"}},
		{name: "no owners", want: []string{"node-0-provisioning"}},
		{name: "owned by its claim", owners: []metav1.OwnerReference{poolRef, claimRef(ipamv1.GroupVersion.String(), "IPClaim", "node-0-provisioning")}},
		{name: "owned by another claim", owners: []metav1.OwnerReference{claimRef(ipamv1.GroupVersion.String(), "IPClaim", "node-1-provisioning")},
			want: []string{"node-0-provisioning"}},
		{name: "owned by another group's kind of that name", owners: []metav1.OwnerReference{claimRef("example.com/v1", "IPClaim", "node-0-provisioning")},
			want: []string{"node-0-provisioning"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			address := &ipamv1.IPAddress{
				ObjectMeta: metav1.ObjectMeta{OwnerReferences: tt.owners},
				Spec:       ipamv1.IPAddressSpec{Claim: corev1.ObjectReference{Name: "node-0-provisioning"}},
			}
			assert.Equal(t, tt.want, unownedAddressClaim(address))
		})
	}
	assert.Nil(t, unownedAddressClaim(&ipamv1.IPAddress{}), "an address without a claim")
}

func TestHostNameStem(t *testing.T) {
	for _, tt := range []struct {
		host string
		want []string
	}{
		{host: "pooled-3", want: []string{"pooled"}},
		{host: "pooled-12", want: []string{"pooled"}},
		{host: "pool-2-3", want: []string{"pool-2"}},
		{host: "rack.a-3", want: []string{"rack.a"}},
		{host: "pooled"},
		{host: "pooled-"},
		{host: "-3"},
		{host: "pooled-3a"},
		{host: "pooled-a"},
	} {
		host := &bmov1alpha1.BareMetalHost{ObjectMeta: metav1.ObjectMeta{Name: tt.host}}
		assert.Equal(t, tt.want, hostNameStem(host), "host %q", tt.host)
	}
}
