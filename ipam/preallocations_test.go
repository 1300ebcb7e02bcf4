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
	"fmt"
	"testing"

	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
)

// Our keys are those our field manager's update record names, with the
// earlier versions' annotation: never another manager's, never a status.
func TestOwnKeysFromTheManagedFields(t *testing.T) {
	record := func(manager string, operation metav1.ManagedFieldsOperationType, subresource, fields string) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{
			Manager: manager, Operation: operation, Subresource: subresource,
			FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(fields)},
		}
	}
	pool := &ipamv1.IPPool{ObjectMeta: metav1.ObjectMeta{
		Annotations: map[string]string{preprovv1.PreallocatedForAnnotation: `["old-provisioning","ours-provisioning"]`},
		ManagedFields: []metav1.ManagedFieldsEntry{
			record("kubectl-edit", metav1.ManagedFieldsOperationUpdate, "",
				`{"f:spec":{"f:preAllocations":{".":{},"f:users-provisioning":{}}}}`),
			record(preprovv1.PreallocationsFieldManager, metav1.ManagedFieldsOperationUpdate, "",
				`{"f:spec":{"f:preAllocations":{"f:ours-provisioning":{},"f:node-0-provisioning":{}}}}`),
			record(preprovv1.PreallocationsFieldManager, metav1.ManagedFieldsOperationUpdate, "status",
				`{"f:status":{"f:allocations":{"f:node-1-provisioning":{}}}}`),
			record(preprovv1.PreallocationsFieldManager, metav1.ManagedFieldsOperationApply, "",
				`{"f:spec":{"f:preAllocations":{"f:applied-provisioning":{}}}}`),
			record(preprovv1.PreallocationsFieldManager, metav1.ManagedFieldsOperationUpdate, "", `not json`),
		},
	}}
	assert.Equal(t, []string{"node-0-provisioning", "old-provisioning", "ours-provisioning"}, ownKeys(pool))

	// Removing "old-provisioning" shrinks the annotation; it goes with the last key.
	require.NoError(t, setOwnKeys(pool, []string{"node-0-provisioning", "ours-provisioning"}))
	assert.Equal(t, `["ours-provisioning"]`, pool.Annotations[preprovv1.PreallocatedForAnnotation])
	require.NoError(t, setOwnKeys(pool, []string{"node-0-provisioning"}))
	assert.NotContains(t, pool.Annotations, preprovv1.PreallocatedForAnnotation)
}

// A pool takes an entry while its estimated size, with IPAM's status and
// both managers' managedFields, stays within PoolSizeBudget: 10,000 entries
// of hosts named host-00000 fit, of hosts named rack-000-node-00 they do not.
func TestPoolFullPastTheBudget(t *testing.T) {
	poolOf := func(name func(int) string, n int) *ipamv1.IPPool {
		pool := &ipamv1.IPPool{ObjectMeta: metav1.ObjectMeta{Name: "provisioning"}, Spec: ipamv1.IPPoolSpec{
			PreAllocations: map[string]ipamv1.IPAddressStr{},
		}}
		for i := range n {
			pool.Spec.PreAllocations[ClaimName(name(i), pool.Name)] = ipamv1.IPAddressStr(fmt.Sprintf("10.0.%d.%d", i/250, i%250))
		}
		return pool
	}
	short := func(i int) string { return fmt.Sprintf("host-%05d", i) }
	long := func(i int) string { return fmt.Sprintf("rack-%03d-node-%02d", i/100, i%100) }
	tests := []struct {
		name string
		pool *ipamv1.IPPool
		full bool
	}{
		{name: "10,000 entries of short names", pool: poolOf(short, 10000)},
		{name: "10,000 entries of long names", pool: poolOf(long, 10000), full: true},
		{name: "8,000 entries of long names", pool: poolOf(long, 8000)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			note, full := poolFull(tt.pool, "next-provisioning", "10.0.255.1")
			assert.Equal(t, tt.full, full)
			if full {
				assert.Contains(t, note, `IPPool "provisioning" holds 10000 spec.preAllocations entries`)
				assert.Contains(t, note, "shard the pool")
				assert.LessOrEqual(t, len(note), 1024, "an event's note")
			}
		})
	}
}
