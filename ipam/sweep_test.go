package ipam

import (
	"context"
	"fmt"
	"os"
	"testing"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	capm3 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/test/envtest"
	"github.com/capm3-preprov/capm3-preprov/test/fixtures"
)

// The sweep runs here on a control plane WITHOUT the garbage collector: as if
// hosts had been deleted while nothing enforced their owner references, so
// only the sweep can release their claims.
var k8sClient client.Client

func TestMain(m *testing.M) {
	env, err := envtest.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	k8sClient = env.Client
	code := m.Run()
	_ = env.Stop()
	os.Exit(code)
}

func TestSweepReleasesClaimsOfDeletedHostsOnly(t *testing.T) {
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "sweep-"}}
	require.NoError(t, k8sClient.Create(ctx, ns))

	alive := fixtures.Host(ns.Name, "alive", "52:54:00:aa:bb:01", nil)
	provisioned := fixtures.Host(ns.Name, "provisioned", "52:54:00:aa:bb:02", nil)
	require.NoError(t, k8sClient.Create(ctx, alive))
	require.NoError(t, k8sClient.Create(ctx, provisioned))
	data := &capm3.Metal3Data{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "workers-0"}}
	require.NoError(t, k8sClient.Create(ctx, data))
	// A host deleted while no manager ran, and one recreated since under the
	// same name (a new UID): the claims of the old ones must go.
	gone := hostRef("gone", "uid-of-a-deleted-host")
	recreated := fixtures.Host(ns.Name, "recreated", "52:54:00:aa:bb:03", nil)
	require.NoError(t, k8sClient.Create(ctx, recreated))

	claims := map[string][]metav1.OwnerReference{
		"alive-pool":       {hostRef(alive.Name, alive.UID)},
		"gone-pool":        {gone},
		"recreated-pool":   {hostRef("recreated", "uid-of-the-earlier-host")},
		"provisioned-pool": {hostRef("deleted-but-provisioned", "uid-x"), metal3DataOwnerReference(data)},
	}
	for name, owners := range claims {
		claim := &ipamv1.IPClaim{
			ObjectMeta: metav1.ObjectMeta{
				Namespace: ns.Name, Name: name, OwnerReferences: owners,
				Labels: map[string]string{preprovv1.ManagedLabel: preprovv1.ManagedLabelValue},
			},
			Spec: ipamv1.IPClaimSpec{Pool: corev1.ObjectReference{Name: "pool"}},
		}
		require.NoError(t, k8sClient.Create(ctx, claim))
	}
	foreign := &ipamv1.IPClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "someone-elses", OwnerReferences: []metav1.OwnerReference{gone}},
		Spec:       ipamv1.IPClaimSpec{Pool: corev1.ObjectReference{Name: "pool"}},
	}
	require.NoError(t, k8sClient.Create(ctx, foreign))

	sweeper := &Sweeper{Client: k8sClient, APIReader: k8sClient}
	require.NoError(t, sweeper.Sweep(ctx, ""))

	exists := func(name string) bool {
		err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns.Name, Name: name}, &ipamv1.IPClaim{})
		if apierrors.IsNotFound(err) {
			return false
		}
		require.NoError(t, err)
		return true
	}
	assert.True(t, exists("alive-pool"), "the claim of a live host was deleted")
	assert.True(t, exists("provisioned-pool"), "a claim a live Metal3Data owns was deleted")
	assert.True(t, exists("someone-elses"), "a claim without our label was deleted")
	assert.False(t, exists("gone-pool"), "the claim of a deleted host leaked")
	assert.False(t, exists("recreated-pool"), "the claim of the earlier host of the same name leaked")
}

func hostRef(name string, uid types.UID) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: bmov1alpha1.GroupVersion.String(), Kind: "BareMetalHost", Name: name, UID: uid}
}
