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

package ownership

import (
	"testing"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	capm3 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var (
	host = &bmov1alpha1.BareMetalHost{ObjectMeta: metav1.ObjectMeta{Name: "node-0", UID: "uid-host"}}

	hostRef        = metav1.OwnerReference{APIVersion: "metal3.io/v1alpha1", Kind: "BareMetalHost", Name: "node-0", UID: "uid-host"}
	earlierHostRef = metav1.OwnerReference{APIVersion: "metal3.io/v1alpha1", Kind: "BareMetalHost", Name: "node-0", UID: "uid-earlier"}
	otherHostRef   = metav1.OwnerReference{APIVersion: "metal3.io/v1alpha1", Kind: "BareMetalHost", Name: "node-1", UID: "uid-other"}
	foreignHostRef = metav1.OwnerReference{APIVersion: "example.com/v1", Kind: "BareMetalHost", Name: "node-0", UID: "uid-host"}
	dataRef        = metav1.OwnerReference{APIVersion: "infrastructure.cluster.x-k8s.io/v1beta2", Kind: "Metal3Data", Name: "workers-0", UID: "uid-data"}
	oldDataRef     = metav1.OwnerReference{APIVersion: "infrastructure.cluster.x-k8s.io/v1beta1", Kind: "Metal3Data", Name: "workers-1", UID: "uid-old"}
	foreignDataRef = metav1.OwnerReference{APIVersion: "example.com/v1", Kind: "Metal3Data", Name: "workers-0"}
	dataClaimRef   = metav1.OwnerReference{APIVersion: "infrastructure.cluster.x-k8s.io/v1beta2", Kind: "Metal3DataClaim", Name: "m-0"}
	unparsableRef  = metav1.OwnerReference{APIVersion: "metal3.io/v1alpha1/extra", Kind: "BareMetalHost", Name: "node-0", UID: "uid-host"}
)

func owned(refs ...metav1.OwnerReference) *metav1.ObjectMeta {
	return &metav1.ObjectMeta{Name: "node-0-provisioning", OwnerReferences: refs}
}

func TestOwnerReferencesWeWrite(t *testing.T) {
	assert.Equal(t, hostRef, HostOwnerReference(host))
	data := &capm3.Metal3Data{ObjectMeta: metav1.ObjectMeta{Name: "workers-0", UID: "uid-data"}}
	assert.Equal(t, dataRef, Metal3DataOwnerReference(data))
	assert.True(t, IsHost(HostOwnerReference(host)))
	assert.True(t, IsMetal3Data(Metal3DataOwnerReference(data)))
}

func TestReferenceKinds(t *testing.T) {
	tests := []struct {
		name       string
		ref        metav1.OwnerReference
		host, data bool
	}{
		{name: "BMO's BareMetalHost", ref: hostRef, host: true},
		{name: "a BareMetalHost kind of another group", ref: foreignHostRef},
		{name: "an apiVersion that does not parse", ref: unparsableRef},
		{name: "CAPM3's v1beta2 Metal3Data", ref: dataRef, data: true},
		{name: "CAPM3's v1beta1 Metal3Data", ref: oldDataRef, data: true},
		{name: "a Metal3Data kind of another group", ref: foreignDataRef},
		{name: "CAPM3's Metal3DataClaim", ref: dataClaimRef},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.host, IsHost(tt.ref), "IsHost")
			assert.Equal(t, tt.data, IsMetal3Data(tt.ref), "IsMetal3Data")
		})
	}
}

func TestOwnerChecks(t *testing.T) {
	tests := []struct {
		name            string
		owners          []metav1.OwnerReference
		ownedByHost     bool
		staleHostOwner  bool
		hostOwners      []string
		metal3DataOwner []metav1.OwnerReference
	}{
		{name: "no owner"},
		{name: "the host", owners: []metav1.OwnerReference{hostRef}, ownedByHost: true, hostOwners: []string{"node-0"}},
		{
			name:   "the host and CAPM3's Metal3Data after the handoff",
			owners: []metav1.OwnerReference{hostRef, dataRef}, ownedByHost: true, hostOwners: []string{"node-0"},
			metal3DataOwner: []metav1.OwnerReference{dataRef},
		},
		{
			name:   "an earlier host of the same name",
			owners: []metav1.OwnerReference{earlierHostRef}, staleHostOwner: true, hostOwners: []string{"node-0"},
		},
		{name: "another host", owners: []metav1.OwnerReference{otherHostRef}, hostOwners: []string{"node-1"}},
		{name: "a BareMetalHost kind of another group with the host's UID", owners: []metav1.OwnerReference{foreignHostRef}},
		{
			name: "only CAPM3's Metal3Data", owners: []metav1.OwnerReference{dataClaimRef, dataRef, oldDataRef},
			metal3DataOwner: []metav1.OwnerReference{dataRef, oldDataRef},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := owned(tt.owners...)
			assert.Equal(t, tt.ownedByHost, OwnedByHost(obj, host), "OwnedByHost")
			assert.Equal(t, tt.staleHostOwner, HasStaleHostOwner(obj, host), "HasStaleHostOwner")
			assert.Equal(t, tt.hostOwners, HostOwners(obj), "HostOwners")
			assert.Equal(t, tt.metal3DataOwner, Metal3DataOwners(obj), "Metal3DataOwners")
			assert.Equal(t, len(tt.metal3DataOwner) > 0, UsedByCAPM3(obj), "UsedByCAPM3")
		})
	}
}

func TestOurs(t *testing.T) {
	tests := []struct {
		name   string
		labels map[string]string
		want   bool
	}{
		{name: "no labels"},
		{name: "our label", labels: map[string]string{"preprovisioning.metal3.io/managed": "true"}, want: true},
		{name: "our label with another value", labels: map[string]string{"preprovisioning.metal3.io/managed": "false"}},
		{name: "CAPM3's labels", labels: map[string]string{"infrastructure.cluster.x-k8s.io/data-name": "workers-0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, Ours(&metav1.ObjectMeta{Labels: tt.labels}))
		})
	}
}

func TestPauses(t *testing.T) {
	tests := []struct {
		name                string
		annotations         map[string]string
		pausedForUs         bool
		pausedBySomeoneElse bool
		pausedOrMoving      bool
	}{
		{name: "not paused"},
		{name: "paused for us", annotations: map[string]string{"baremetalhost.metal3.io/paused": "metal3.io/preprovisioning"}, pausedForUs: true},
		{name: "paused by CAPM3", annotations: map[string]string{"baremetalhost.metal3.io/paused": "metal3.io/capm3"}, pausedBySomeoneElse: true},
		{name: "paused with no value", annotations: map[string]string{"baremetalhost.metal3.io/paused": ""}, pausedBySomeoneElse: true},
		{name: "Cluster API's pause", annotations: map[string]string{"cluster.x-k8s.io/paused": ""}, pausedOrMoving: true},
		{name: "clusterctl move", annotations: map[string]string{"clusterctl.cluster.x-k8s.io/delete-for-move": ""}, pausedOrMoving: true},
		{
			name:        "paused for us and by Cluster API",
			annotations: map[string]string{"baremetalhost.metal3.io/paused": "metal3.io/preprovisioning", "cluster.x-k8s.io/paused": "true"},
			pausedForUs: true, pausedOrMoving: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := &metav1.ObjectMeta{Name: "node-0", Annotations: tt.annotations}
			assert.Equal(t, tt.pausedForUs, PausedForUs(obj), "PausedForUs")
			assert.Equal(t, tt.pausedBySomeoneElse, PausedBySomeoneElse(obj), "PausedBySomeoneElse")
			assert.Equal(t, tt.pausedOrMoving, PausedOrMoving(obj), "PausedOrMoving")
		})
	}
}

func TestWithHostShard(t *testing.T) {
	tests := []struct {
		name       string
		hostLabels map[string]string
		want       map[string]string
	}{
		{name: "no shard", hostLabels: map[string]string{"rack": "r1"},
			want: map[string]string{"preprovisioning.metal3.io/managed": "true"}},
		{name: "a shard", hostLabels: map[string]string{"rack": "r1", "cluster.x-k8s.io/watch-filter": "shard-a"},
			want: map[string]string{"preprovisioning.metal3.io/managed": "true", "cluster.x-k8s.io/watch-filter": "shard-a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			shardHost := &bmov1alpha1.BareMetalHost{ObjectMeta: metav1.ObjectMeta{Name: "node-0", Labels: tt.hostLabels}}
			assert.Equal(t, tt.want, WithHostShard(shardHost, map[string]string{"preprovisioning.metal3.io/managed": "true"}))
		})
	}
}

func TestConsumers(t *testing.T) {
	tests := []struct {
		name             string
		consumer         *corev1.ObjectReference
		byCAPM3, byOther bool
	}{
		{name: "not consumed"},
		{name: "CAPM3's Metal3Machine", consumer: &corev1.ObjectReference{
			APIVersion: "infrastructure.cluster.x-k8s.io/v1beta2", Kind: "Metal3Machine", Name: "m-0"}, byCAPM3: true},
		{name: "CAPM3's Metal3Machine, older version", consumer: &corev1.ObjectReference{
			APIVersion: "infrastructure.cluster.x-k8s.io/v1beta1", Kind: "Metal3Machine", Name: "m-0"}, byCAPM3: true},
		{name: "BMO's HostClaim", consumer: &corev1.ObjectReference{
			APIVersion: "metal3.io/v1alpha1", Kind: "HostClaim", Name: "tenant-a"}, byOther: true},
		{name: "a kind of a user's own, named like CAPM3's", consumer: &corev1.ObjectReference{
			APIVersion: "example.com/v1", Kind: "Metal3Machine", Name: "m-0"}, byOther: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			consumed := &bmov1alpha1.BareMetalHost{Spec: bmov1alpha1.BareMetalHostSpec{ConsumerRef: tt.consumer}}
			assert.Equal(t, tt.byCAPM3, ConsumedByMetal3Machine(consumed))
			assert.Equal(t, tt.byOther, ConsumedByOthers(consumed))
		})
	}
}
