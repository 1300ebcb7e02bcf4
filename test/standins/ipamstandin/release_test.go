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

package ipamstandin_test

import (
	"context"
	"testing"

	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capm3-preprov/capm3-preprov/test/framework"
	"github.com/capm3-preprov/capm3-preprov/test/framework/fixtures"
	"github.com/capm3-preprov/capm3-preprov/test/standins/ipamstandin"
)

// The two windows in which the real IPAM leaves an IPAddress behind its
// deleted claim, and what it does with such an address afterwards: the
// stand-in must do the same, or the tests built on it prove nothing about
// the real thing.
func TestAddressesLeftBehindAsIPAMLeavesThem(t *testing.T) {
	env, err := framework.StartControlPlane(framework.StartControlPlaneInput{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = env.Stop() })
	ctx := context.Background()

	for _, tt := range []struct {
		name string
		// wantErr is what the reconcile in the window reports, if anything.
		wantErr string
		// deleteClaim deletes the claim at the step the window is at.
		deleteClaim func(r *ipamstandin.Reconciler, c client.Client, request ctrl.Request, claim *ipamv1.IPClaim) error
	}{{
		name:    "deleted after its address was created, before its finalizer was written",
		wantErr: "failed to patch IPClaim host-pool",
		deleteClaim: func(r *ipamstandin.Reconciler, c client.Client, request ctrl.Request, _ *ipamv1.IPClaim) error {
			r.Client = &deleteClaimOnAddressCreate{Client: c}
			_, err := r.Reconcile(ctx, request)
			r.Client = c
			return err
		},
	}, {
		name: "deleted and released while the cache had not seen its address",
		deleteClaim: func(r *ipamstandin.Reconciler, c client.Client, request ctrl.Request, claim *ipamv1.IPClaim) error {
			if _, err := r.Reconcile(ctx, request); err != nil {
				return err
			}
			if err := c.Delete(ctx, claim); err != nil {
				return err
			}
			r.Client = &addressesUnseen{Client: c}
			_, err := r.Reconcile(ctx, request)
			r.Client = c
			return err
		},
	}} {
		t.Run(tt.name, func(t *testing.T) {
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "standin-"}}
			require.NoError(t, env.Client.Create(ctx, ns))
			pool := fixtures.Pool(ns.Name, "pool", "192.0.2.10", "192.0.2.20", "192.0.2.1")
			require.NoError(t, env.Client.Create(ctx, pool))
			claim := newClaim(ns.Name, "host-pool")
			require.NoError(t, env.Client.Create(ctx, claim))

			r := &ipamstandin.Reconciler{Client: env.Client}
			request := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(pool)}
			err := tt.deleteClaim(r, env.Client, request, claim)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				require.True(t, apierrors.IsNotFound(err), "IPAM reports the claim as not found: %v", err)
			} else {
				require.NoError(t, err)
			}

			err = env.Client.Get(ctx, client.ObjectKeyFromObject(claim), &ipamv1.IPClaim{})
			require.True(t, apierrors.IsNotFound(err), "the deleted claim is still there: %v", err)
			addresses := &ipamv1.IPAddressList{}
			require.NoError(t, env.Client.List(ctx, addresses, client.InNamespace(ns.Name)))
			require.Len(t, addresses.Items, 1, "IPAM leaves the address of the deleted claim behind")
			left := addresses.Items[0]
			assert.Equal(t, "host-pool", left.Spec.Claim.Name)
			assert.Equal(t, ipamv1.IPAddressStr("192.0.2.10"), left.Spec.Address)
			assert.Equal(t, []string{ipamv1.IPAddressFinalizer}, left.Finalizers)

			serveNew := func(name string) *ipamv1.IPClaim {
				served := newClaim(ns.Name, name)
				require.NoError(t, env.Client.Create(ctx, served))
				_, err := r.Reconcile(ctx, request)
				require.NoError(t, err)
				require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(served), served))
				require.NotNil(t, served.Status.Address, "claim %s got no address", name)
				return served
			}
			other := serveNew("other-pool")
			assert.Equal(t, "pool-192-0-2-11", other.Status.Address.Name, "a claim of another name must not get the address left behind")
			sameName := serveNew("host-pool")
			assert.Equal(t, left.Name, sameName.Status.Address.Name, "a claim of the same name takes the address left behind over")
			require.NoError(t, env.Client.List(ctx, addresses, client.InNamespace(ns.Name)))
			assert.Len(t, addresses.Items, 2, "taking an address over creates no IPAddress")
		})
	}
}

func newClaim(namespace, name string) *ipamv1.IPClaim {
	return &ipamv1.IPClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec:       ipamv1.IPClaimSpec{Pool: corev1.ObjectReference{Name: "pool"}},
	}
}

// deleteClaimOnAddressCreate deletes a claim right after IPAM created its
// IPAddress, as the garbage collector does when the claim's host is deleted
// at that moment.
type deleteClaimOnAddressCreate struct {
	client.Client
}

func (c *deleteClaimOnAddressCreate) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	if err := c.Client.Create(ctx, obj, opts...); err != nil {
		return err
	}
	address, ok := obj.(*ipamv1.IPAddress)
	if !ok {
		return nil
	}
	claim := &ipamv1.IPClaim{ObjectMeta: metav1.ObjectMeta{Namespace: address.Namespace, Name: address.Spec.Claim.Name}}
	return c.Client.Delete(ctx, claim)
}

// addressesUnseen is a cache that has not seen any IPAddress yet.
type addressesUnseen struct {
	client.Client
}

func (c *addressesUnseen) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if err := c.Client.List(ctx, list, opts...); err != nil {
		return err
	}
	if addresses, ok := list.(*ipamv1.IPAddressList); ok {
		addresses.Items = nil
	}
	return nil
}

func (c *addressesUnseen) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if _, ok := obj.(*ipamv1.IPAddress); ok {
		return apierrors.NewNotFound(ipamv1.GroupVersion.WithResource("ipaddresses").GroupResource(), key.Name)
	}
	return c.Client.Get(ctx, key, obj, opts...)
}
