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

package clusterctl_test

import (
	"context"
	"strings"
	"testing"
	"time"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/test/framework"
)

// TestMoveOfHeldHostsWithEditsWritesNothing holds the hosts of a namespace
// with cluster.x-k8s.io/paused, edits their template and pool on the
// source while `clusterctl move` runs with the source controller left
// running, and checks from the source's audit log that the controller
// wrote nothing to a host, claim, address or Secret there: the edits map
// to the held hosts, and each reconcile asks the host itself. On the
// target the hosts stay held until the hold is lifted; then they catch up
// with the edit, keeping their addresses.
func TestMoveOfHeldHostsWithEditsWritesNothing(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	source := startManagementCluster(t, "source")
	target := startManagementCluster(t, "target")
	src := source.env.Client
	ns := createMovedNamespace(ctx, t, src)
	stopSourceIPAM := startIPAMStandIn(t, source)
	defer stopSourceIPAM()
	sourceManager := startManagerProcess(t, source.kubeconfigs[managerUser], "source-manager")
	for _, host := range []string{machineTemplateHost, preprovTemplateHost} {
		waitForSetUp(ctx, t, src, ns, host)
	}
	before := readNamespace(ctx, t, src, ns)
	for name := range before.hosts {
		annotate(ctx, t, src, ns, name, clusterv1.PausedAnnotation, ptr.To(""))
	}

	// The edits, then the move: the controller works on the edits' events
	// while clusterctl reads, copies and deletes the namespace.
	moveStart := time.Now()
	editTemplateAndPool(ctx, t, src, ns)
	_, log, err := repo.run(ctx, nil, "move", "--namespace", ns,
		"--kubeconfig", source.clusterctlKubeconfig, "--to-kubeconfig", target.clusterctlKubeconfig)
	require.NoError(t, err, log)
	control := createControlNamespace(ctx, t, src)
	waitForSetUp(ctx, t, src, control, "control-0")
	require.NoError(t, sourceManager.Stop(), "the source manager did not exit cleanly")
	var hostWrites []string
	for _, write := range writes(t, source.auditLog, managerUser, ns, moveStart, time.Now()) {
		// The template is not held: its status follows the edit.
		if !strings.Contains(write, " metal3preprovisioningtemplates/status ") {
			hostWrites = append(hostWrites, write)
		}
	}
	assert.Empty(t, hostWrites, "our controller on the source wrote to held hosts or theirs during the move")

	// The target: the hosts stay held, then catch up once released.
	dst := target.env.Client
	stopTargetIPAM := startIPAMStandIn(t, target)
	defer stopTargetIPAM()
	waitForClaimAddresses(ctx, t, dst, ns, before.claimAddresses)
	targetManager := startManagerProcess(t, target.kubeconfigs[managerUser], "target-manager")
	defer func() { assert.NoError(t, targetManager.Stop(), "the target manager did not exit cleanly") }()
	for name := range before.hosts {
		annotate(ctx, t, dst, ns, name, clusterv1.PausedAnnotation, nil)
	}
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		networkData, err := framework.NetworkData(ctx, dst, ns, preprovTemplateHost)
		require.NoError(c, err)
		links, _ := networkData["links"].([]any)
		require.NotEmpty(c, links)
		link, _ := links[0].(map[string]any)
		assert.InDelta(c, 9000, link["mtu"], 0, "the held host did not catch up with the edit once released")
	}, moveTimeout, movePoll)
	after := readNamespace(ctx, t, dst, ns)
	assert.Equal(t, before.claimAddresses, after.claimAddresses, "a host's address changed across the hold and the move")
	assert.Equal(t, preprovv1.PausedForPreprovisioning, after.hosts[sparePausedHost].paused)
}

// annotate sets a host's annotation, or removes it when value is nil.
func annotate(ctx context.Context, t *testing.T, c client.Client, namespace, name, key string, value *string) {
	t.Helper()
	host := &bmov1alpha1.BareMetalHost{}
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, host))
	original := host.DeepCopy()
	if value == nil {
		delete(host.Annotations, key)
	} else {
		host.Annotations[key] = *value
	}
	require.NoError(t, c.Patch(ctx, host, client.MergeFrom(original)))
}

// editTemplateAndPool raises the MTU of the Metal3PreprovisioningTemplate's
// link and grows the pool.
func editTemplateAndPool(ctx context.Context, t *testing.T, c client.Client, namespace string) {
	t.Helper()
	template := &preprovv1.Metal3PreprovisioningTemplate{}
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "rack-r1"}, template))
	original := template.DeepCopy()
	template.Spec.NetworkData.Links.Ethernets[0].MTU = 9000
	require.NoError(t, c.Patch(ctx, template, client.MergeFrom(original)))
	pool := &ipamv1.IPPool{}
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: poolName}, pool))
	originalPool := pool.DeepCopy()
	pool.Spec.Pools[0].End = ptr.To(ipamv1.IPAddressStr("192.0.2.30"))
	require.NoError(t, c.Patch(ctx, pool, client.MergeFrom(originalPool)))
}
