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
