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
	"context"
	"testing"

	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func TestAddressCountsFollowTheCachesEvents(t *testing.T) {
	address := func(namespace, name, pool string) *ipamv1.IPAddress {
		return &ipamv1.IPAddress{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
			Spec:       ipamv1.IPAddressSpec{Pool: corev1.ObjectReference{Name: pool}},
		}
	}
	provisioning, ns2Provisioning := client.ObjectKey{Namespace: "ns", Name: "provisioning"}, client.ObjectKey{Namespace: "ns2", Name: "provisioning"}
	baremetal := client.ObjectKey{Namespace: "ns", Name: "baremetal"}
	tests := []struct {
		name   string
		events func(*AddressCounts)
		want   map[client.ObjectKey]int
	}{
		{
			name: "added, by namespace and pool",
			events: func(a *AddressCounts) {
				a.added(address("ns", "a", "provisioning"))
				a.added(address("ns", "b", "provisioning"))
				a.added(address("ns", "c", "baremetal"))
				a.added(address("ns2", "a", "provisioning"))
			},
			want: map[client.ObjectKey]int{provisioning: 2, baremetal: 1, ns2Provisioning: 1},
		},
		{
			name: "an update counts once",
			events: func(a *AddressCounts) {
				a.added(address("ns", "a", "provisioning"))
				a.updated(address("ns", "a", "provisioning"), address("ns", "a", "provisioning"))
			},
			want: map[client.ObjectKey]int{provisioning: 1},
		},
		{
			name: "deleted, also when the cache missed the deletion",
			events: func(a *AddressCounts) {
				a.added(address("ns", "a", "provisioning"))
				a.added(address("ns", "b", "provisioning"))
				a.added(address("ns", "c", "baremetal"))
				a.deleted(address("ns", "a", "provisioning"))
				a.deleted(toolscache.DeletedFinalStateUnknown{Key: "ns/c", Obj: address("ns", "c", "baremetal")})
			},
			want: map[client.ObjectKey]int{provisioning: 1},
		},
		{
			name: "other objects are not counted",
			events: func(a *AddressCounts) {
				a.added(&ipamv1.IPClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}})
				a.deleted(toolscache.DeletedFinalStateUnknown{Key: "ns/b", Obj: &ipamv1.IPClaim{}})
			},
			want: map[client.ObjectKey]int{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			counts := &AddressCounts{counts: map[client.ObjectKey]int{}, synced: func() bool { return true }}
			tt.events(counts)
			assert.Equal(t, tt.want, counts.counts)
			for pool, want := range tt.want {
				got, err := counts.PoolAddresses(context.Background(), pool)
				require.NoError(t, err)
				assert.Equal(t, want, got, "pool %s", pool)
			}
		})
	}
}

func TestAddressCountsWaitForTheCache(t *testing.T) {
	counts := &AddressCounts{counts: map[client.ObjectKey]int{}, synced: func() bool { return false }}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := counts.PoolAddresses(ctx, client.ObjectKey{Namespace: "ns", Name: "provisioning"})
	assert.ErrorIs(t, err, context.Canceled)
}
