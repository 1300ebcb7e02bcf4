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

package baremetal

import (
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
)

func TestReadyConditionOfUnreachableEndpoints(t *testing.T) {
	tests := []struct {
		name   string
		counts HostCounts
		reason string
	}{
		{name: "every failed host is kept paused for its endpoints", counts: HostCounts{Matched: 3, Ready: 1, Failed: 2, Unreachable: 2},
			reason: preprovv1.EndpointsUnreachableReason},
		{name: "other failures too", counts: HostCounts{Matched: 3, Failed: 2, Unreachable: 1}, reason: preprovv1.HostsFailedReason},
		{name: "none", counts: HostCounts{Matched: 3, Failed: 1}, reason: preprovv1.HostsFailedReason},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			condition := ReadyCondition(tt.counts, "")
			assert.Equal(t, tt.reason, condition.Reason)
			assert.Equal(t, metav1.ConditionFalse, condition.Status)
		})
	}
	condition := ReadyCondition(HostCounts{Matched: 3, Failed: 2, Unreachable: 2}, "")
	assert.Equal(t, "2 of 3 hosts are kept paused: their network data gives the deploy ramdisk no way to the endpoints it must "+
		"reach without DHCP; see their PreprovisioningEndpointUnreachable Warning events", condition.Message)
}
