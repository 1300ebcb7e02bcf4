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
	"sync/atomic"
	"testing"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/baremetal"
	"github.com/capm3-preprov/capm3-preprov/ipam"
	"github.com/capm3-preprov/capm3-preprov/test/framework/fixtures"
)

// A reconcile often runs before the cache shows what the previous one
// wrote: the first claim's event requeues the host before the second claim
// is in the cache, the Secret's event before the patched host is. Writing
// again then is refused (AlreadyExists, Conflict) and still costs a token of
// the client's rate limiter, which bounds a fleet's set-up time.
func TestReconcileOnACacheBehindOurWritesWritesNothingAgain(t *testing.T) {
	ns := newNamespace(t)
	// Not opted in, so only this test's host manager (all machine
	// templates) sets the host up, not the suite's manager. The suite's
	// manager sees a template of its own that cannot work, so it leaves
	// the host's claims alone (a host no template selects gives them back).
	m3mt := fixtures.MachineTemplate(ns, "workers", "pooled", workers)
	delete(m3mt.Annotations, preprovv1.EnabledAnnotation)
	suiteOnly := fixtures.PreprovisioningTemplate(ns, "suite-only", workers, nil)
	suiteOnly.Spec.DataTemplateRef = &corev1.LocalObjectReference{Name: "absent"}
	create(t,
		suiteOnly,
		fixtures.Pool(ns, "provisioning", "192.0.2.10", "192.0.2.20", "192.0.2.1"),
		fixtures.DataTemplate(ns, "pooled", fixtures.PoolNetworkData("provisioning")),
		m3mt,
		fixtures.Host(ns, "node-0", "52:54:00:aa:bb:01", workers),
	)
	// The suite's manager records the problem of its template on the host;
	// this test's manager does not see that template, nor the problem.
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Equal(c, baremetal.ReasonTemplateInvalid, getHost(c, ns, "node-0").Annotations[preprovv1.ProblemAnnotation])
	}, waitTimeout, pollInterval)
	withoutSuiteProblem := func(host *bmov1alpha1.BareMetalHost) *bmov1alpha1.BareMetalHost {
		delete(host.Annotations, preprovv1.ProblemAnnotation)
		return host
	}
	counting, writes, err := testEnv.NewCountingClient()
	require.NoError(t, err)
	var hidden atomic.Value // the kind a lagging cache does not show yet
	hidden.Store("")
	lagging := interceptor.NewClient(counting.(client.WithWatch), interceptor.Funcs{
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if _, suiteOnly := list.(*preprovv1.Metal3PreprovisioningTemplateList); suiteOnly {
				return nil
			}
			return c.List(ctx, list, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			patchErr := c.Patch(ctx, obj, patch, opts...)
			if host, ok := obj.(*bmov1alpha1.BareMetalHost); ok {
				withoutSuiteProblem(host)
			}
			return patchErr
		},
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			gvk, gvkErr := c.GroupVersionKindFor(obj)
			if gvkErr == nil && gvk.Kind == hidden.Load() {
				return apierrors.NewNotFound(schema.GroupResource{Resource: gvk.Kind}, key.Name)
			}
			return c.Get(ctx, key, obj, opts...)
		},
	})
	manager := &baremetal.HostManager{
		Client:    lagging,
		Templates: &baremetal.Templates{Reader: lagging, AllMachineTemplates: true},
		Claims:    &ipam.Claims{Client: lagging},
		Recorder:  events.NewFakeRecorder(100),
	}
	ctx := context.Background()

	outcome, err := manager.Reconcile(ctx, withoutSuiteProblem(getHost(t, ns, "node-0")))
	require.NoError(t, err)
	assert.Equal(t, baremetal.PhaseWaiting, outcome.Phase)
	assert.Equal(t, []string{"create IPClaim: 1"}, writes.Writes())

	hidden.Store("IPClaim")
	outcome, err = manager.Reconcile(ctx, withoutSuiteProblem(getHost(t, ns, "node-0")))
	require.NoError(t, err)
	assert.Equal(t, baremetal.PhaseWaiting, outcome.Phase)
	assert.Positive(t, outcome.RequeueAfter, "a claim deleted before the cache showed it must not leave the host waiting for good")
	assert.Equal(t, []string{"create IPClaim: 1"}, writes.Writes(), "the claim was created again")

	hidden.Store("")
	stale := withoutSuiteProblem(getHost(t, ns, "node-0"))
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		settled, reconcileErr := manager.Reconcile(ctx, stale.DeepCopy())
		require.NoError(c, reconcileErr)
		assert.Equal(c, baremetal.PhaseReady, settled.Phase, settled.Message)
	}, waitTimeout, pollInterval)
	assert.Equal(t, []string{"create IPClaim: 1", "create Secret: 1", "patch BareMetalHost: 1"}, writes.Writes())

	_, pending := manager.PatchPending(stale)
	assert.True(t, pending, "the host as it was before our patch must not be worked on")
	_, pending = manager.PatchPending(getHost(t, ns, "node-0"))
	assert.False(t, pending)

	hidden.Store("Secret")
	outcome, err = manager.Reconcile(ctx, withoutSuiteProblem(getHost(t, ns, "node-0")))
	require.NoError(t, err)
	assert.Equal(t, baremetal.PhaseWaiting, outcome.Phase)
	assert.Positive(t, outcome.RequeueAfter)
	assert.Equal(t, []string{"create IPClaim: 1", "create Secret: 1", "patch BareMetalHost: 1"}, writes.Writes(), "the Secret was created again")
}
