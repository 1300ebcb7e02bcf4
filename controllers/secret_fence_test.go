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

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/baremetal"
	"github.com/capm3-preprov/capm3-preprov/internal/ownership"
	"github.com/capm3-preprov/capm3-preprov/ipam"
	"github.com/capm3-preprov/capm3-preprov/test/framework/fixtures"
)

// A user's Secret made under our name after ours went is never
// overwritten, whatever our cache shows when the host is next re-rendered:
// that the Secret is gone (the create finds the name taken), that ours is
// still there (the fenced patch conflicts, and the retry sees the cache
// caught up), or, the name found taken by a Secret of ours that lost our
// label, a user's put in its place before our patch. Each time the host
// gets the outcome of a Secret of our name that is not the host's.
func TestUsersSecretMadeAfterOursWentIsNeverOverwritten(t *testing.T) {
	for _, ordering := range []struct {
		name string
		// cacheShowsOurs: the cache has not seen our Secret go.
		cacheShowsOurs bool
		// replacedAfterRead: ours lost our label (the cache does not show
		// it), and the user replaces it right after our create found the
		// name taken and read what holds it.
		replacedAfterRead bool
	}{
		{name: "deleted, then the user's created before our re-render"},
		{name: "the user's created while our cache still shows ours", cacheShowsOurs: true},
		{name: "the user's put in place of ours between our read and our patch", replacedAfterRead: true},
	} {
		t.Run(ordering.name, func(t *testing.T) {
			ns := newNamespace(t)
			ctx := context.Background()
			view := newSecretCacheView(t)
			manager := view.hostManager()
			// A shard no manager serves: only this test's host manager
			// sets the host up.
			racked := map[string]string{"rack": "r1", clusterv1.WatchLabel: "unserved"}
			template := fixtures.PreprovisioningTemplate(ns, "rack-r1", map[string]string{"rack": "r1"}, fixtures.StaticNetworkData())
			template.Labels = map[string]string{clusterv1.WatchLabel: "unserved"}
			create(t, template, fixtures.Host(ns, "node-0", "52:54:00:aa:bb:01", racked))
			require.EventuallyWithT(t, func(c *assert.CollectT) {
				outcome, err := manager.Reconcile(ctx, getHost(c, ns, "node-0"))
				require.NoError(c, err)
				assert.Equal(c, baremetal.PhaseReady, outcome.Phase, outcome.Message)
			}, waitTimeout, pollInterval)
			// The Secret's event brings the host back: the cache shows it.
			outcome, err := manager.Reconcile(ctx, getHost(t, ns, "node-0"))
			require.NoError(t, err)
			require.Equal(t, baremetal.PhaseReady, outcome.Phase, outcome.Message)
			key := client.ObjectKey{Namespace: ns, Name: baremetal.NetworkDataSecretName("node-0")}
			ours := &corev1.Secret{}
			require.NoError(t, k8sClient.Get(ctx, key, ours))
			users := &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: key.Name},
				StringData: map[string]string{"networkData": "the user's"},
			}

			switch {
			case ordering.replacedAfterRead:
				lost := ours.DeepCopy()
				delete(lost.Labels, preprovv1.ManagedLabel)
				require.NoError(t, k8sClient.Patch(ctx, lost, client.MergeFrom(ours)))
				view.afterRead(key, func() { replaceSecret(t, lost, users) })
			default:
				replaceSecret(t, ours, users)
				// The template changes: the host is re-rendered.
				current := getTemplate(t, ns, "rack-r1")
				original := current.DeepCopy()
				current.Spec.NetworkData.Links.Ethernets[0].MTU = 9000
				require.NoError(t, k8sClient.Patch(ctx, current, client.MergeFrom(original)))
			}
			if ordering.cacheShowsOurs {
				view.shows(ours)
			}
			if ordering.cacheShowsOurs || ordering.replacedAfterRead {
				_, fenced := manager.Reconcile(ctx, getHost(t, ns, "node-0"))
				require.Error(t, fenced)
				assert.True(t, apierrors.IsConflict(fenced), "the patch of a Secret we read earlier must be fenced: %v", fenced)
				view.shows(nil)
			}
			outcome, err = manager.Reconcile(ctx, getHost(t, ns, "node-0"))
			require.NoError(t, err)
			assert.Equal(t, baremetal.PhaseFailed, outcome.Phase, outcome.Message)
			assert.Equal(t, baremetal.ReasonSecretConflict, outcome.Reason)
			assert.Contains(t, outcome.Message, `Secret "node-0-preprov-networkdata" exists but was not created for this host`)

			kept := &corev1.Secret{}
			require.NoError(t, k8sClient.Get(ctx, key, kept))
			assert.Equal(t, "the user's", string(kept.Data["networkData"]))
			assert.Empty(t, kept.Labels)
			assert.Empty(t, kept.Annotations)
			assert.Empty(t, kept.OwnerReferences)
		})
	}
}

// secretCacheView is a host manager's view of the host's Secret as its
// cache would give it, on the real API server: only Secrets with our label,
// or a copy of ours the cache still shows after it went.
type secretCacheView struct {
	direct client.WithWatch
	stale  atomic.Pointer[corev1.Secret]
	// hook runs once, right after the API reader read the Secret named by
	// hookKey.
	hook    atomic.Pointer[func()]
	hookKey client.ObjectKey
}

func newSecretCacheView(t *testing.T) *secretCacheView {
	t.Helper()
	direct, err := client.NewWithWatch(testEnv.Config, client.Options{Scheme: testEnv.Scheme})
	require.NoError(t, err)
	return &secretCacheView{direct: direct}
}

// shows makes the cache show this Secret whatever the API server holds;
// nil ends it.
func (v *secretCacheView) shows(secret *corev1.Secret) { v.stale.Store(secret) }

// afterRead runs do once, right after the API reader read the Secret key.
func (v *secretCacheView) afterRead(key client.ObjectKey, do func()) {
	v.hookKey = key
	v.hook.Store(&do)
}

func (v *secretCacheView) hostManager() *baremetal.HostManager {
	cached := interceptor.NewClient(v.direct, interceptor.Funcs{Get: v.cachedGet})
	apiReader := interceptor.NewClient(v.direct, interceptor.Funcs{Get: v.apiGet})
	return &baremetal.HostManager{
		Client:    cached,
		APIReader: apiReader,
		Templates: &baremetal.Templates{Reader: cached},
		Claims:    &ipam.Claims{Client: cached},
		Recorder:  events.NewFakeRecorder(100),
	}
}

func (v *secretCacheView) cachedGet(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object,
	opts ...client.GetOption,
) error {
	secret, isSecret := obj.(*corev1.Secret)
	if !isSecret {
		return c.Get(ctx, key, obj, opts...)
	}
	if stale := v.stale.Load(); stale != nil {
		stale.DeepCopyInto(secret)
		return nil
	}
	if err := c.Get(ctx, key, secret, opts...); err != nil {
		return err
	}
	if !ownership.Ours(secret) {
		return apierrors.NewNotFound(corev1.Resource("secrets"), key.Name)
	}
	return nil
}

func (v *secretCacheView) apiGet(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object,
	opts ...client.GetOption,
) error {
	err := c.Get(ctx, key, obj, opts...)
	if _, isSecret := obj.(*corev1.Secret); isSecret && key == v.hookKey {
		if do := v.hook.Swap(nil); do != nil {
			(*do)()
		}
	}
	return err
}

// replaceSecret deletes a Secret, waits until it is gone, and creates
// another of its name.
func replaceSecret(t *testing.T, gone, replacement *corev1.Secret) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, k8sClient.Delete(ctx, gone))
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		err := k8sClient.Get(ctx, client.ObjectKeyFromObject(gone), &corev1.Secret{})
		assert.True(c, apierrors.IsNotFound(err), "the Secret is still there: %v", err)
	}, waitTimeout, pollInterval)
	require.NoError(t, k8sClient.Create(ctx, replacement))
}
