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

package capiipamstandin_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ipamv1 "sigs.k8s.io/cluster-api/api/ipam/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/capm3-preprov/capm3-preprov/test/framework"
	"github.com/capm3-preprov/capm3-preprov/test/standins/capiipamstandin"
	inclusterv1alpha2 "github.com/capm3-preprov/capm3-preprov/test/standins/capiipamstandin/v1alpha2"
)

const (
	waitTimeout  = 30 * time.Second
	pollInterval = 50 * time.Millisecond
)

var (
	env     *framework.ControlPlane
	c       client.Client
	standIn *framework.CAPIIPAMStandIn
	// startOnce starts one control plane, as framework.StartControlPlane
	// installs it (our CRDs, the upstream ones and the stand-in's pool), and
	// the stand-in as it behaves by default, for the tests that need them;
	// each works in a namespace of its own.
	startOnce = sync.OnceValue(func() error {
		var err error
		if env, err = framework.StartControlPlane(framework.StartControlPlaneInput{}); err != nil {
			return err
		}
		if c, err = newClient(); err != nil {
			return err
		}
		standIn, err = framework.StartCAPIIPAMStandIn(env.Config)
		return err
	})
)

func TestMain(m *testing.M) {
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.ErrorLevel)))
	code := m.Run()
	var errs []error
	if standIn != nil {
		errs = append(errs, standIn.Stop())
	}
	if env != nil {
		errs = append(errs, env.Stop())
	}
	if err := errors.Join(errs...); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	os.Exit(code)
}

// startStandIn starts the control plane and the stand-in on first use.
func startStandIn(t *testing.T) {
	t.Helper()
	require.NoError(t, startOnce())
}

func newClient() (client.Client, error) {
	scheme := framework.Scheme()
	if err := capiipamstandin.AddToScheme(scheme); err != nil {
		return nil, err
	}
	return client.New(env.Config, client.Options{Scheme: scheme})
}

func TestServesTheLowestFreeAddress(t *testing.T) {
	ns := newNamespace(t)
	// .0 and .15 are the /28's network and broadcast addresses, .1 the
	// gateway, .2 and .3 excluded: .4 is the lowest the pool gives.
	pool := createPool(t, ns, "pool", func(spec *inclusterv1alpha2.InClusterIPPoolSpec) {
		spec.Addresses = []string{"192.0.2.0/28"}
		spec.Prefix = 28
		spec.Gateway = "192.0.2.1"
		spec.ExcludedAddresses = []string{"192.0.2.2-192.0.2.3"}
	})
	first := createClaim(t, ns, "first", "pool", nil)
	assert.Equal(t, "192.0.2.4", waitForAddress(t, first).Spec.Address)
	second := createClaim(t, ns, "second", "pool", nil)
	address := waitForAddress(t, second)

	assert.Equal(t, "192.0.2.5", address.Spec.Address)
	assert.Equal(t, ptr.To[int32](28), address.Spec.Prefix)
	assert.Equal(t, "192.0.2.1", address.Spec.Gateway)
	assert.Equal(t, ipamv1.IPAddressClaimReference{Name: "second"}, address.Spec.ClaimRef)
	assert.Equal(t, ipamv1.IPPoolReference{APIGroup: "ipam.cluster.x-k8s.io", Kind: "InClusterIPPool", Name: "pool"}, address.Spec.PoolRef)
	assert.Equal(t, []string{capiipamstandin.ProtectAddressFinalizer}, address.Finalizers)
	assert.ElementsMatch(t, []metav1.OwnerReference{
		{APIVersion: "ipam.cluster.x-k8s.io/v1beta2", Kind: "IPAddressClaim", Name: "second", UID: second.UID,
			Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)},
		{APIVersion: "ipam.cluster.x-k8s.io/v1alpha2", Kind: "InClusterIPPool", Name: "pool", UID: pool.UID,
			Controller: ptr.To(false), BlockOwnerDeletion: ptr.To(true)},
	}, address.OwnerReferences)

	served := get(t, second)
	assert.Equal(t, []string{capiipamstandin.ReleaseAddressFinalizer}, served.Finalizers)
	assert.Empty(t, served.Status.Conditions, "the in-cluster provider writes no condition on claims")

	require.EventuallyWithT(t, func(c *assert.CollectT) {
		counts := get(c, pool).Status.Addresses
		if assert.NotNil(c, counts) {
			assert.Equal(c, inclusterv1alpha2.InClusterIPPoolStatusIPAddresses{Total: 11, Used: 2, Free: 9}, *counts)
		}
	}, waitTimeout, pollInterval)
	assert.Equal(t, []string{capiipamstandin.ProtectPoolFinalizer}, get(t, pool).Finalizers)
}

// An exhausted pool leaves the claim without an address, and serves it when
// a deleted claim's address frees: the deleted claim's IPAddress goes, and
// then the claim itself.
func TestExhaustedPoolServesTheClaimOnceAnAddressFrees(t *testing.T) {
	ns := newNamespace(t)
	pool := createPool(t, ns, "single", func(spec *inclusterv1alpha2.InClusterIPPoolSpec) {
		spec.Addresses = []string{"192.0.2.10"}
		spec.Prefix = 24
	})
	holder := createClaim(t, ns, "holder", "single", nil)
	held := waitForAddress(t, holder)
	waiting := createClaim(t, ns, "waiting", "single", nil)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Contains(c, get(c, waiting).Finalizers, capiipamstandin.ReleaseAddressFinalizer)
		counts := get(c, pool).Status.Addresses
		if assert.NotNil(c, counts) {
			assert.Zero(c, counts.Free)
		}
	}, waitTimeout, pollInterval)
	assert.Empty(t, get(t, waiting).Status.AddressRef.Name, "an exhausted pool gives no address")
	assert.Empty(t, get(t, waiting).Status.Conditions)

	require.NoError(t, c.Delete(context.Background(), holder))
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assertGone(c, held)
		assertGone(c, holder)
	}, waitTimeout, pollInterval)
	assert.Equal(t, "192.0.2.10", waitForAddress(t, waiting).Spec.Address)
}

// Claims the provider must not touch: paused, of a paused Cluster, of a
// Cluster that does not exist. A claim created after them is served.
func TestClaimsOnHoldAreLeftAlone(t *testing.T) {
	ns := newNamespace(t)
	createPool(t, ns, "pool", func(spec *inclusterv1alpha2.InClusterIPPoolSpec) {
		spec.Addresses = []string{"192.0.2.10-192.0.2.20"}
		spec.Prefix = 24
	})
	require.NoError(t, c.Create(context.Background(), &clusterv1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "paused"},
		Spec:       clusterv1.ClusterSpec{Paused: ptr.To(true)},
	}))
	onHold := []*ipamv1.IPAddressClaim{
		createClaim(t, ns, "paused", "pool", func(claim *ipamv1.IPAddressClaim) {
			claim.Annotations = map[string]string{clusterv1.PausedAnnotation: ""}
		}),
		createClaim(t, ns, "of-a-paused-cluster", "pool", func(claim *ipamv1.IPAddressClaim) {
			claim.Spec.ClusterName = "paused"
		}),
		createClaim(t, ns, "of-no-cluster", "pool", func(claim *ipamv1.IPAddressClaim) {
			claim.Spec.ClusterName = "missing"
		}),
	}
	waitForAddress(t, createClaim(t, ns, "served", "pool", nil))

	for _, claim := range onHold {
		left := get(t, claim)
		assert.Empty(t, left.Finalizers, claim.Name)
		assert.Empty(t, left.Status.AddressRef.Name, claim.Name)
		assertGone(t, &ipamv1.IPAddress{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: claim.Name}})
	}
}

// A claim of a pool that does not exist gets the finalizer and nothing
// else, and is served once the pool is created.
func TestClaimOfAMissingPoolWaitsForThePool(t *testing.T) {
	ns := newNamespace(t)
	claim := createClaim(t, ns, "early", "later", nil)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Equal(c, []string{capiipamstandin.ReleaseAddressFinalizer}, get(c, claim).Finalizers)
	}, waitTimeout, pollInterval)
	assert.Empty(t, get(t, claim).Status.Conditions)
	assert.Empty(t, get(t, claim).Status.AddressRef.Name)

	createPool(t, ns, "later", func(spec *inclusterv1alpha2.InClusterIPPoolSpec) {
		spec.Addresses = []string{"192.0.2.10"}
		spec.Prefix = 24
	})
	assert.Equal(t, "192.0.2.10", waitForAddress(t, claim).Spec.Address)
}

// Options.ReadyCondition: Cluster API's Ready condition, True when served,
// False with reason PoolExhausted when the pool has no free address.
func TestReadyCondition(t *testing.T) {
	startStandIn(t)
	require.NoError(t, standIn.Stop())
	standIn.Options.ReadyCondition = true
	require.NoError(t, standIn.Start())
	t.Cleanup(func() {
		assert.NoError(t, standIn.Stop())
		standIn.Options.ReadyCondition = false
		assert.NoError(t, standIn.Start())
	})
	ns := newNamespace(t)
	createPool(t, ns, "single", func(spec *inclusterv1alpha2.InClusterIPPoolSpec) {
		spec.Addresses = []string{"192.0.2.10"}
		spec.Prefix = 24
	})
	served := createClaim(t, ns, "served", "single", nil)
	waitForAddress(t, served)
	ready := meta.FindStatusCondition(get(t, served).Status.Conditions, ipamv1.IPAddressClaimReadyCondition)
	require.NotNil(t, ready)
	assert.Equal(t, metav1.ConditionTrue, ready.Status)

	exhausted := createClaim(t, ns, "exhausted", "single", nil)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		ready := meta.FindStatusCondition(get(c, exhausted).Status.Conditions, ipamv1.IPAddressClaimReadyCondition)
		if assert.NotNil(c, ready) {
			assert.Equal(c, metav1.ConditionFalse, ready.Status)
			assert.Equal(c, ipamv1.IPAddressClaimReadyPoolExhaustedReason, ready.Reason)
			assert.Equal(c, "InClusterIPPool single has no free address", ready.Message)
		}
	}, waitTimeout, pollInterval)
}

func newNamespace(t *testing.T) string {
	t.Helper()
	startStandIn(t)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "capi-ipam-"}}
	require.NoError(t, c.Create(context.Background(), ns))
	return ns.Name
}

func createPool(t *testing.T, ns, name string, spec func(*inclusterv1alpha2.InClusterIPPoolSpec)) *inclusterv1alpha2.InClusterIPPool {
	t.Helper()
	pool := &inclusterv1alpha2.InClusterIPPool{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	spec(&pool.Spec)
	require.NoError(t, c.Create(context.Background(), pool))
	return pool
}

func createClaim(t *testing.T, ns, name, pool string, change func(*ipamv1.IPAddressClaim)) *ipamv1.IPAddressClaim {
	t.Helper()
	claim := &ipamv1.IPAddressClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: ipamv1.IPAddressClaimSpec{PoolRef: ipamv1.IPPoolReference{
			APIGroup: inclusterv1alpha2.GroupVersion.Group, Kind: inclusterv1alpha2.InClusterIPPoolKind, Name: pool,
		}},
	}
	if change != nil {
		change(claim)
	}
	require.NoError(t, c.Create(context.Background(), claim))
	return claim
}

// waitForAddress waits until the claim's status.addressRef names an
// IPAddress, and returns it.
func waitForAddress(t *testing.T, claim *ipamv1.IPAddressClaim) *ipamv1.IPAddress {
	t.Helper()
	address := &ipamv1.IPAddress{}
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		name := get(c, claim).Status.AddressRef.Name
		if assert.Equal(c, claim.Name, name, "the IPAddress is named like its claim") {
			address = get(c, &ipamv1.IPAddress{ObjectMeta: metav1.ObjectMeta{Namespace: claim.Namespace, Name: name}})
		}
	}, waitTimeout, pollInterval)
	return address
}

func get[T client.Object](t assert.TestingT, obj T) T {
	fresh := obj.DeepCopyObject().(T)
	assert.NoError(t, c.Get(context.Background(), client.ObjectKeyFromObject(obj), fresh))
	return fresh
}

func assertGone(t assert.TestingT, obj client.Object) {
	err := c.Get(context.Background(), client.ObjectKeyFromObject(obj), obj.DeepCopyObject().(client.Object))
	assert.True(t, apierrors.IsNotFound(err), "%s %s is still there (%v)", obj.GetObjectKind().GroupVersionKind().Kind, obj.GetName(), err)
}
