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

package controllers

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/baremetal"
	"github.com/capm3-preprov/capm3-preprov/ipam"
	"github.com/capm3-preprov/capm3-preprov/test/framework/fixtures"
)

// A pool whose entries, with Metal3 IPAM's status and both managers'
// managedFields, would take it past what etcd stores is not written: the
// host is set up all the same (its claim holds its address) and a Warning
// says to shard the pool, before the API server drops the pool's
// managedFields and then refuses every write of it, IPAM's too.
func TestPoolPreallocationsSayWhenAPoolIsTooLarge(t *testing.T) {
	ns := newNamespace(t)
	pool := fixtures.Pool(ns, "provisioning", "10.0.0.10", "10.0.255.250", "10.0.0.1")
	pool.Spec.Prefix = 16
	create(t,
		pool,
		fixtures.DataTemplate(ns, "pooled", fixtures.PoolNetworkData(pool.Name)),
		fixtures.MachineTemplate(ns, "workers", "pooled", workers),
		fixtures.Host(ns, "node-0", "52:54:00:aa:bb:01", workers),
	)
	waitForNetworkData(t, ns, "node-0")
	// 10,000 hosts of racks of 100 recorded earlier, as the backstop does.
	entries := map[string]ipamv1.IPAddressStr{}
	for i := range 10000 {
		entries[ipam.ClaimName(fmt.Sprintf("rack-%03d-node-%02d", i/100, i%100), pool.Name)] =
			ipamv1.IPAddressStr(fmt.Sprintf("10.0.%d.%d", 100+i/200, 10+i%200))
	}
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"preAllocations": entries}})
	require.NoError(t, err)
	require.NoError(t, k8sClient.Patch(context.Background(), pool, client.RawPatch(types.MergePatchType, patch),
		client.FieldOwner(preprovv1.PreallocationsFieldManager)))

	manager, writes := countingHostManager(t, false)
	manager.Preallocations = &ipam.Preallocations{Client: manager.Client}
	recorder := manager.Recorder.(*events.FakeRecorder)
	outcome, err := manager.Reconcile(context.Background(), getHost(t, ns, "node-0"))
	require.NoError(t, err)
	assert.Equal(t, baremetal.PhaseReady, outcome.Phase)
	assert.Empty(t, writes.Writes(), "the pool was written past its size")
	require.NoError(t, k8sClient.Get(context.Background(), client.ObjectKeyFromObject(pool), pool))
	assert.NotContains(t, pool.Spec.PreAllocations, ipam.ClaimName("node-0", pool.Name))
	require.Len(t, recorder.Events, 1)
	event := <-recorder.Events
	assert.True(t, strings.HasPrefix(event, "Warning "+baremetal.ReasonPreallocationsPoolFull+" "), event)
	assert.Contains(t, event, `IPPool "provisioning" holds 10000 spec.preAllocations entries`)
	assert.Contains(t, event, "shard the pool")
}
