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
	"strings"
	"testing"

	capm3 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/baremetal"
	"github.com/capm3-preprov/capm3-preprov/test/framework"
	"github.com/capm3-preprov/capm3-preprov/test/framework/fixtures"
)

// capm3Pause is the value CAPM3's MachineManager.SetPauseAnnotation puts in
// BMO's pause annotation while the host's Cluster is paused.
const capm3Pause = "metal3.io/capm3"

// CAPM3 pauses the hosts of a paused Cluster, as clusterctl move pauses it
// for the whole move. The handoff leaves such a host's claims alone, as
// every other path leaves the host, and hands them over once CAPM3 lifts
// the pause.
func TestHandoffLeavesAHostPausedByCAPM3Alone(t *testing.T) {
	ns := newNamespace(t)
	createPooledWorkers(t, ns, "paused", "control")
	waitForNetworkData(t, ns, "paused")
	waitForNetworkData(t, ns, "control")
	annotateHost(t, ns, "paused", preprovv1.PausedAnnotation, capm3Pause)
	before := claimOf(t, ns, "paused-provisioning").ResourceVersion

	data := provisionedByCAPM3(t, ns, "paused", "paused-machine", "pooled-0")
	controlData := provisionedByCAPM3(t, ns, "control", "control-machine", "pooled-1")
	// The barrier: the control host's claim was handed over.
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Equal(c, []types.UID{controlData.UID}, metal3DataOwners(claimOf(c, ns, "control-provisioning")))
	}, waitTimeout, pollInterval)
	assert.Never(t, func() bool {
		return claimOf(t, ns, "paused-provisioning").ResourceVersion != before
	}, heldWindow, pollInterval, "the claim of a host CAPM3 paused was written")
	assert.Empty(t, metal3DataOwners(claimOf(t, ns, "paused-provisioning")))

	removeHostAnnotation(t, ns, "paused", preprovv1.PausedAnnotation)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Equal(c, []types.UID{data.UID}, metal3DataOwners(claimOf(c, ns, "paused-provisioning")))
	}, waitTimeout, pollInterval)
}

// The Warning of a Metal3Data outside the host's shard names the
// Metal3Data and its Metal3Machine; with names as long as Kubernetes allows
// it is longer than an event may be, and still arrives, shortened.
func TestShardMismatchOfLongNamesArrivesShortened(t *testing.T) {
	ns := newNamespace(t)
	shard := ns
	startShardManager(t, shard)
	ctx := context.Background()
	inShard := map[string]string{clusterv1.WatchLabel: shard}
	pool := fixtures.Pool(ns, "provisioning", "192.0.2.10", "192.0.2.20", "192.0.2.1")
	pool.Labels = inShard
	template := fixtures.PreprovisioningTemplate(ns, "rack-r1", map[string]string{"rack": "r1"}, fixtures.PoolNetworkData("provisioning"))
	template.Labels = inShard
	create(t, pool, template, fixtures.Host(ns, "node-0", "52:54:00:aa:bb:01", map[string]string{clusterv1.WatchLabel: shard, "rack": "r1"}))
	waitForNetworkData(t, ns, "node-0")

	machine, dataName := strings.Repeat("m", 250), strings.Repeat("d", 250)
	data := &capm3.Metal3Data{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: dataName},
		Spec: capm3.Metal3DataSpec{
			Index: new(int32), Claim: &capm3.Metal3ObjectRef{Name: machine}, Template: &capm3.Metal3ObjectRef{Name: "pooled"},
		},
	}
	dataClaim := &capm3.Metal3DataClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: machine},
		Spec:       capm3.Metal3DataClaimSpec{Template: &capm3.Metal3ObjectRef{Name: "pooled"}},
	}
	create(t, data, dataClaim)
	require.NoError(t, framework.NameRenderedData(ctx, k8sClient, dataClaim, data.Name))
	host := getHost(t, ns, "node-0")
	original := host.DeepCopy()
	host.Spec.ConsumerRef = &corev1.ObjectReference{
		APIVersion: capm3.GroupVersion.String(), Kind: "Metal3Machine", Namespace: ns, Name: machine,
	}
	require.NoError(t, k8sClient.Patch(ctx, host, client.MergeFrom(original)))

	note := waitForEvent(t, ns, "node-0", ReasonShardMismatch)
	assert.LessOrEqual(t, len(note), baremetal.MaxEventNote)
	assert.True(t, strings.HasPrefix(note, `Metal3Data "`+dataName+`" of Metal3Machine "`+machine+`" has no `), note)
	assert.True(t, strings.HasSuffix(note, "…"), note)
}
