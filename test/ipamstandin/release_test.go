package ipamstandin

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

	"github.com/capm3-preprov/capm3-preprov/test/envtest"
	"github.com/capm3-preprov/capm3-preprov/test/fixtures"
)

// A claim deleted right after its address was created, while the cache has
// seen neither the address nor, maybe, the claim's status.address: the
// address must still be deleted before the claim goes.
func TestReleaseDeletesAnAddressTheCacheHasNotSeen(t *testing.T) {
	env, err := envtest.Start()
	require.NoError(t, err)
	t.Cleanup(func() { _ = env.Stop() })
	ctx := context.Background()

	for _, tt := range []struct {
		name       string
		hideStatus bool
	}{
		{name: "the cached claim has status.address"},
		{name: "the cached claim lacks status.address", hideStatus: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "standin-"}}
			require.NoError(t, env.Client.Create(ctx, ns))
			pool := fixtures.Pool(ns.Name, "pool", "192.0.2.10", "192.0.2.20", "192.0.2.1")
			require.NoError(t, env.Client.Create(ctx, pool))
			claim := &ipamv1.IPClaim{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "host-pool"},
				Spec:       ipamv1.IPClaimSpec{Pool: corev1.ObjectReference{Name: pool.Name}},
			}
			require.NoError(t, env.Client.Create(ctx, claim))

			r := &Reconciler{Client: env.Client, APIReader: env.Client}
			request := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(pool)}
			_, err := r.Reconcile(ctx, request)
			require.NoError(t, err)
			require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(claim), claim))
			require.NotNil(t, claim.Status.Address, "no address was allocated")

			require.NoError(t, env.Client.Delete(ctx, claim))
			r.Client = &laggingCache{Client: env.Client, hideStatus: tt.hideStatus}
			_, err = r.Reconcile(ctx, request)
			require.NoError(t, err)

			err = env.Client.Get(ctx, client.ObjectKeyFromObject(claim), claim)
			assert.True(t, apierrors.IsNotFound(err), "the deleted claim was not released: %v", err)
			addresses := &ipamv1.IPAddressList{}
			require.NoError(t, env.Client.List(ctx, addresses, client.InNamespace(ns.Name)))
			assert.Empty(t, addresses.Items, "the address of the deleted claim leaked")
		})
	}
}

// laggingCache is a client whose lists have not seen any IPAddress yet and,
// with hideStatus, no claim's status.address.
type laggingCache struct {
	client.Client
	hideStatus bool
}

func (c *laggingCache) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if err := c.Client.List(ctx, list, opts...); err != nil {
		return err
	}
	switch list := list.(type) {
	case *ipamv1.IPAddressList:
		list.Items = nil
	case *ipamv1.IPClaimList:
		if c.hideStatus {
			for i := range list.Items {
				list.Items[i].Status.Address = nil
			}
		}
	}
	return nil
}
