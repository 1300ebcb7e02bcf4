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
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	capm3 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	capipamv1 "sigs.k8s.io/cluster-api/api/ipam/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/baremetal"
	"github.com/capm3-preprov/capm3-preprov/cmd/kubectl-preprov/plugin"
	"github.com/capm3-preprov/capm3-preprov/test/framework"
	"github.com/capm3-preprov/capm3-preprov/test/framework/fixtures"
)

// readOnlyKubeconfig is a kubeconfig whose identity may get, list and watch
// everything and write nothing: kubectl preprov must work with it, which
// shows that it sends no write.
var readOnlyKubeconfig = sync.OnceValues(func() (string, error) {
	const name = "kubectl-preprov-reader"
	ctx := context.Background()
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"get", "list", "watch"}}},
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, Name: framework.ServiceAccountUser("default", name)}},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
	}
	for _, obj := range []client.Object{role, binding} {
		if err := k8sClient.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			return "", err
		}
	}
	return testEnv.ServiceAccountKubeconfig("default", name)
})

// runPlugin runs kubectl preprov as the read-only identity and returns
// what it printed.
func runPlugin(t *testing.T, args ...string) (string, error) {
	t.Helper()
	kubeconfig, err := readOnlyKubeconfig()
	require.NoError(t, err)
	var out, errOut bytes.Buffer
	command := plugin.NewCommand(&out, &errOut)
	command.SetArgs(append(args, "--kubeconfig", kubeconfig))
	err = command.Execute()
	return out.String(), err
}

// TestPluginRendersWhatTheControllerWrote renders every example host with
// kubectl preprov, from the cluster and from the example's files with the
// host's addresses, and compares the bytes with the Secret the controller
// wrote.
func TestPluginRendersWhatTheControllerWrote(t *testing.T) {
	t.Parallel()
	for _, folder := range exampleFolders(t) {
		t.Run(folder, func(t *testing.T) {
			t.Parallel()
			ns := newNamespace(t)
			example := applyExample(t, ns, folder)
			for host := range waitForExample(t, ns, example) {
				secret := &corev1.Secret{}
				key := client.ObjectKey{Namespace: ns, Name: baremetal.NetworkDataSecretName(host)}
				require.NoError(t, k8sClient.Get(context.Background(), key, secret))
				want := string(secret.Data[preprovv1.NetworkDataKey]) + "\n"

				fromCluster, err := runPlugin(t, "render", host, "-n", ns, "-o", "networkdata")
				require.NoError(t, err, host)
				assert.Equal(t, want, fromCluster, "%s: rendered from the cluster", host)

				args := []string{"render", host, "-f", filepath.Join(examplesDir, folder), "-o", "networkdata"}
				for pool, ip := range hostAddresses(t, ns, host) {
					args = append(args, "--address", pool+"="+ip)
				}
				fromFiles, err := runPlugin(t, args...)
				require.NoError(t, err, host)
				assert.Equal(t, want, fromFiles, "%s: rendered from the example's files", host)
			}
		})
	}
}

// hostAddresses returns the host's address on each pool, from its claims,
// as --address takes it.
func hostAddresses(t *testing.T, ns, host string) map[string]string {
	t.Helper()
	ctx := context.Background()
	claims := &ipamv1.IPClaimList{}
	require.NoError(t, k8sClient.List(ctx, claims, client.InNamespace(ns)))
	addresses := map[string]string{}
	for _, claim := range claims.Items {
		if len(claim.OwnerReferences) == 0 || claim.OwnerReferences[0].Name != host || claim.Status.Address == nil {
			continue
		}
		address := &ipamv1.IPAddress{}
		require.NoError(t, k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: claim.Status.Address.Name}, address))
		addresses[claim.Spec.Pool.Name] = string(address.Spec.Address)
	}
	// A Cluster API IPAM pool's address comes with its prefix and gateway.
	clusterClaims := &capipamv1.IPAddressClaimList{}
	require.NoError(t, k8sClient.List(ctx, clusterClaims, client.InNamespace(ns)))
	for _, claim := range clusterClaims.Items {
		if len(claim.OwnerReferences) == 0 || claim.OwnerReferences[0].Name != host || claim.Status.AddressRef.Name == "" {
			continue
		}
		address := &capipamv1.IPAddress{}
		require.NoError(t, k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: claim.Status.AddressRef.Name}, address))
		given := fmt.Sprintf("%s/%d", address.Spec.Address, *address.Spec.Prefix)
		if address.Spec.Gateway != "" {
			given += "," + address.Spec.Gateway
		}
		addresses[claim.Spec.PoolRef.Name] = given
	}
	return addresses
}

func TestPluginRenderShowsClaimsItWouldMake(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	pool := fixtures.Pool(ns, "provisioning", "192.0.2.10", "192.0.2.20", "192.0.2.1")
	pool.Spec.ClusterName = ptr.To("not-yet")
	create(t, pool,
		fixtures.DataTemplate(ns, "pooled", fixtures.PoolNetworkData("provisioning")),
		fixtures.MachineTemplate(ns, "workers", "pooled", workers),
		fixtures.Host(ns, "worker-0", "52:54:00:aa:bb:01", workers))
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		claim := &ipamv1.IPClaim{}
		assert.NoError(c, k8sClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "worker-0-provisioning"}, claim))
	}, waitTimeout, pollInterval)

	// The claim waits: IPAM serves the pool only once its Cluster exists.
	out, err := runPlugin(t, "render", "worker-0", "-n", ns)
	require.ErrorContains(t, err, "spec.clusterName")
	assert.Contains(t, out, "IPClaim worker-0-provisioning on IPPool provisioning: no address yet: waiting for IPAM")

	// An address of one's choice renders the document.
	out, err = runPlugin(t, "render", "worker-0", "-n", ns, "--address", "provisioning=192.0.2.12")
	require.NoError(t, err)
	assert.Contains(t, out, "IPClaim worker-0-provisioning on IPPool provisioning: 192.0.2.12/24, gateway 192.0.2.1, DNS 192.0.2.53")
	assert.Contains(t, out, `"ip_address": "192.0.2.12"`)

	// A host the controller leaves alone: the claim it would make, which
	// the read-only identity could not have created.
	held := fixtures.Host(ns, "held-0", "52:54:00:aa:bb:02", workers)
	held.Annotations["cluster.x-k8s.io/paused"] = ""
	create(t, held)
	out, err = runPlugin(t, "render", "held-0", "-n", ns)
	require.ErrorContains(t, err, "waiting for IPAM")
	assert.Contains(t, out, `Would:          create IPClaim "held-0-provisioning"`)
	err = k8sClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "held-0-provisioning"}, &ipamv1.IPClaim{})
	assert.True(t, apierrors.IsNotFound(err), "kubectl preprov created an IPClaim: %v", err)
}

// explainCase sets up one situation in a namespace and names the host to
// explain.
type explainCase struct {
	name  string
	setUp func(t *testing.T, ns string) string
	want  plugin.Situation
	// says are parts of the explanation.
	says []string
	// args are more arguments of kubectl preprov explain.
	args []string
}

// TestPluginExplains sets up each situation a host can be in and checks
// what kubectl preprov explain says about it, and that the controller's
// own view of the host (controllerAgrees) is that situation.
func TestPluginExplains(t *testing.T) {
	t.Parallel()
	for _, tt := range []explainCase{{
		name: "set up",
		setUp: func(t *testing.T, ns string) string {
			t.Helper()
			createPooledWorkers(t, ns, "worker-0")
			waitForNetworkData(t, ns, "worker-0")
			return "worker-0"
		},
		want: plugin.SituationSetUp,
		says: []string{"set up from Metal3MachineTemplate/workers", "Normal  PreprovisioningNetworkDataSet: set up from",
			"labels: preprovisioning.metal3.io/managed=true,role=worker",
			"Addresses (the host's claims on the pools of its template):\n  IPClaim worker-0-provisioning on IPPool provisioning: 192.0.2.",
			"When CAPM3 provisions the host it uses this IPClaim", "so the OS keeps this address"},
	}, {
		name: "inspection stalls",
		setUp: func(t *testing.T, ns string) string {
			t.Helper()
			createPooledWorkers(t, ns, "worker-0")
			waitForNetworkData(t, ns, "worker-0")
			host := getHost(t, ns, "worker-0")
			original := host.DeepCopy()
			host.Annotations[preprovv1.UnpausedAtAnnotation] = time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
			require.NoError(t, k8sClient.Patch(context.Background(), host, client.MergeFrom(original)))
			// On a fresh copy each time: the manager records the stall on the
			// host as soon as it sees the old unpause time.
			require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
				host := getHost(t, ns, "worker-0")
				host.Status.Provisioning.State = bmov1alpha1.StateInspecting
				return k8sClient.Status().Update(context.Background(), host)
			}))
			return "worker-0"
		},
		want: plugin.SituationStalled,
		says: []string{"the host is still inspecting 15m0s after we set its network data", "Usual causes"},
	}, {
		name: "an address kept for the running ramdisk",
		setUp: func(t *testing.T, ns string) string {
			t.Helper()
			booted := time.Now().Add(-time.Hour)
			movedToNewPool(t, metal3IPAM, ns, machineState{state: bmov1alpha1.StateAvailable, poweredOn: true, inspect: booted})
			return "node-0"
		},
		want: plugin.SituationAddressesHeld,
		says: []string{"set up from Metal3PreprovisioningTemplate/rack-r1", `IPClaim "node-0-old" on IPPool "old" is kept`,
			"under Ironic's fast track", "Normal  PreprovisioningAddressHeld"},
	}, {
		name: "a ramdisk with no way to Ironic",
		setUp: func(t *testing.T, ns string) string {
			t.Helper()
			racked := map[string]string{"rack": "r1"}
			template := fixtures.PreprovisioningTemplate(ns, "rack-r1", racked, fixtures.PoolNetworkData("provisioning"))
			template.Spec.RamdiskEndpoints = []string{"https://[2001:db8:1::2]:6385"}
			create(t, fixtures.Pool(ns, "provisioning", "192.0.2.10", "192.0.2.20", "192.0.2.1"), template,
				fixtures.Host(ns, "node-0", "52:54:00:aa:bb:01", racked))
			return "node-0"
		},
		want: plugin.SituationUnreachable,
		says: []string{"the host is kept paused (metal3.io/preprovisioning)", "(2001:db8:1::2): the network data has no IPv6 network",
			"give the network data an address of each endpoint's family and a route to it", "Warning  PreprovisioningEndpointUnreachable"},
	}, {
		name: "set up, with an endpoint of the manager's its ramdisk cannot reach",
		setUp: func(t *testing.T, ns string) string {
			t.Helper()
			setUpRackedHost(t, ns)
			return "node-0"
		},
		args: []string{"--ramdisk-endpoints", "http://192.0.2.2:6385"},
		want: plugin.SituationSetUp,
		says: []string{"(the manager's --ramdisk-endpoints): http://192.0.2.2:6385 (192.0.2.2): the network data has no IPv4 network",
			"so it is set up anyway"},
	}, {
		name: "paused by someone else",
		setUp: func(t *testing.T, ns string) string {
			t.Helper()
			createPooledWorkers(t, ns)
			host := fixtures.Host(ns, "worker-0", "52:54:00:aa:bb:01", workers)
			host.Annotations[preprovv1.PausedAnnotation] = "metal3.io/capm3"
			create(t, host)
			return "worker-0"
		},
		want: plugin.SituationPausedByOthers,
		says: []string{`paused with "metal3.io/capm3" by someone else`},
	}, {
		name: "no template",
		setUp: func(t *testing.T, ns string) string {
			t.Helper()
			createPooledWorkers(t, ns)
			create(t, fixtures.Host(ns, "stray-0", "52:54:00:aa:bb:01", map[string]string{"role": "stray"}))
			return "stray-0"
		},
		want: plugin.SituationNoTemplate,
		says: []string{"no template selects the host", "label the host to match a template's hostSelector",
			"Metal3MachineTemplate/workers selects role=worker"},
	}, {
		name: "two templates",
		setUp: func(t *testing.T, ns string) string {
			t.Helper()
			create(t, fixtures.PreprovisioningTemplate(ns, "also-workers", workers, fixtures.StaticNetworkData()))
			createPooledWorkers(t, ns, "worker-0")
			return "worker-0"
		},
		want: plugin.SituationConflict,
		says: []string{"selected by 2 templates (Metal3MachineTemplate/workers, Metal3PreprovisioningTemplate/also-workers)"},
	}, {
		name: "a missing Metal3DataTemplate",
		setUp: func(t *testing.T, ns string) string {
			t.Helper()
			create(t, fixtures.MachineTemplate(ns, "workers", "missing", workers), fixtures.Host(ns, "worker-0", "52:54:00:aa:bb:01", workers))
			return "worker-0"
		},
		want: plugin.SituationInvalidTemplate,
		says: []string{`names Metal3DataTemplate "missing", which does not exist`},
	}, {
		name: "no MAC before inspection",
		setUp: func(t *testing.T, ns string) string {
			t.Helper()
			networkData := fixtures.PoolNetworkData("provisioning")
			networkData.Links.Ethernets = append(networkData.Links.Ethernets, capm3.NetworkDataLinkEthernet{
				Type: "phy", Id: "enp2s0", MTU: 1500, MACAddress: &capm3.NetworkLinkEthernetMac{FromHostInterface: "enp2s0"},
			})
			create(t,
				fixtures.Pool(ns, "provisioning", "192.0.2.10", "192.0.2.20", "192.0.2.1"),
				fixtures.DataTemplate(ns, "two-nics", networkData),
				fixtures.MachineTemplate(ns, "workers", "two-nics", workers),
				fixtures.Host(ns, "worker-0", "52:54:00:aa:bb:01", workers))
			return "worker-0"
		},
		want: plugin.SituationRenderFailed,
		says: []string{"the BareMetalHost is not inspected yet", "use macAddress.string or macAddress.fromAnnotation"},
	}, {
		name: "waiting for IPAM",
		setUp: func(t *testing.T, ns string) string {
			t.Helper()
			pool := fixtures.Pool(ns, "provisioning", "192.0.2.10", "192.0.2.20", "192.0.2.1")
			pool.Spec.ClusterName = ptr.To("not-yet")
			create(t, pool,
				fixtures.DataTemplate(ns, "pooled", fixtures.PoolNetworkData("provisioning")),
				fixtures.MachineTemplate(ns, "workers", "pooled", workers),
				fixtures.Host(ns, "worker-0", "52:54:00:aa:bb:01", workers))
			return "worker-0"
		},
		want: plugin.SituationWaitingForIPAM,
		says: []string{`IPPool "provisioning" has spec.clusterName "not-yet"`, "check that Metal3 IPAM runs"},
	}, {
		name: "an exhausted pool",
		setUp: func(t *testing.T, ns string) string {
			t.Helper()
			create(t,
				fixtures.Pool(ns, "provisioning", "192.0.2.10", "192.0.2.10", "192.0.2.1"),
				fixtures.DataTemplate(ns, "pooled", fixtures.PoolNetworkData("provisioning")),
				fixtures.MachineTemplate(ns, "workers", "pooled", workers),
				fixtures.Host(ns, "worker-0", "52:54:00:aa:bb:01", workers))
			waitForNetworkData(t, ns, "worker-0")
			create(t, fixtures.Host(ns, "worker-1", "52:54:00:aa:bb:02", workers))
			return "worker-1"
		},
		want: plugin.SituationClaimFailed,
		says: []string{"Exhausted IP Pools", "grow the pool"},
	}, {
		name: "held by Cluster API",
		setUp: func(t *testing.T, ns string) string {
			t.Helper()
			createPooledWorkers(t, ns)
			host := fixtures.Host(ns, "worker-0", "52:54:00:aa:bb:01", workers)
			host.Annotations["cluster.x-k8s.io/paused"] = ""
			create(t, host)
			return "worker-0"
		},
		want: plugin.SituationPausedByCAPI,
		says: []string{"the host is paused by Cluster API (annotation cluster.x-k8s.io/paused", "remove the annotation"},
	}, {
		name: "being moved by clusterctl",
		setUp: func(t *testing.T, ns string) string {
			t.Helper()
			createPooledWorkers(t, ns, "worker-0")
			waitForNetworkData(t, ns, "worker-0")
			annotateHost(t, ns, "worker-0", "clusterctl.cluster.x-k8s.io/delete-for-move", "")
			return "worker-0"
		},
		want: plugin.SituationBeingMoved,
		says: []string{"clusterctl move copied the host to its target cluster", "the manager on the target cluster takes the host over"},
	}, {
		name: "not handed over",
		setUp: func(t *testing.T, ns string) string {
			t.Helper()
			createPooledWorkers(t, ns)
			host := fixtures.Host(ns, "worker-0", "52:54:00:aa:bb:01", workers)
			host.Annotations = nil
			create(t, host)
			return "worker-0"
		},
		want: plugin.SituationNotHandedOver,
		says: []string{"neither paused for preprovisioning nor set up by capm3-preprov"},
	}, {
		name: "orphaned",
		setUp: func(t *testing.T, ns string) string {
			t.Helper()
			createPooledWorkers(t, ns, "worker-0")
			waitForNetworkData(t, ns, "worker-0")
			require.NoError(t, k8sClient.Delete(context.Background(), &capm3.Metal3MachineTemplate{ObjectMeta: metaNamed(ns, "workers")}))
			return "worker-0"
		},
		want: plugin.SituationOrphaned,
		says: []string{"no template selects this host any more (it was set up by Metal3MachineTemplate/workers)"},
	}, {
		name: "drift",
		setUp: func(t *testing.T, ns string) string {
			t.Helper()
			racked := map[string]string{"rack": "r1"}
			create(t, fixtures.PreprovisioningTemplate(ns, "rack-r1", racked, fixtures.StaticNetworkData()), fixtures.Host(ns, "node-0", "52:54:00:aa:bb:01", racked))
			waitForNetworkData(t, ns, "node-0")
			host := getHost(t, ns, "node-0")
			host.Status.Provisioning.State = bmov1alpha1.StateProvisioned
			require.NoError(t, k8sClient.Status().Update(context.Background(), host))
			template := getTemplate(t, ns, "rack-r1")
			original := template.DeepCopy()
			template.Spec.NetworkData.Links.Ethernets[0].MTU = 9000
			require.NoError(t, k8sClient.Patch(context.Background(), template, client.MergeFrom(original)))
			return "node-0"
		},
		want: plugin.SituationDrift,
		says: []string{"now renders different network data, but the host is provisioned", "preprovisioning.metal3.io/rerender=true"},
	}} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ns := newNamespace(t)
			host := tt.setUp(t, ns)
			require.EventuallyWithT(t, func(c *assert.CollectT) {
				out, err := runPlugin(t, append([]string{"explain", host, "-n", ns}, tt.args...)...)
				require.NoError(c, err)
				firstLine, _, _ := strings.Cut(out, "\n")
				require.Equal(c, "BareMetalHost "+ns+"/"+host+": "+string(tt.want), firstLine, out)
				for _, says := range tt.says {
					assert.Contains(c, out, says)
				}
				controllerAgrees(c, tt.want, getHost(t, ns, host))
			}, waitTimeout, pollInterval)
		})
	}
}

// controllerAgrees checks that where the controller's code puts a host
// (baremetal's Decide, and the standing its template status and hosts
// metric read back from the objects the running manager wrote) is the
// situation kubectl preprov explain told: both call the same decision.
func controllerAgrees(c *assert.CollectT, situation plugin.Situation, host *bmov1alpha1.BareMetalHost) {
	templates := &baremetal.Templates{Reader: k8sClient}
	decision, err := templates.Decide(context.Background(), host)
	require.NoError(c, err)
	standing, err := (&baremetal.Standings{Reader: k8sClient, Templates: templates}).OfHost(context.Background(), host)
	require.NoError(c, err)
	phase := map[plugin.Situation]baremetal.Phase{
		plugin.SituationNoTemplate: baremetal.PhaseNoTemplate, plugin.SituationConflict: baremetal.PhaseConflict,
		plugin.SituationOrphaned: baremetal.PhaseOrphaned, plugin.SituationDrift: baremetal.PhaseDrifted,
		plugin.SituationWaitingForIPAM: baremetal.PhaseWaiting, plugin.SituationSetUp: baremetal.PhaseReady,
		plugin.SituationStalled: baremetal.PhaseReady, plugin.SituationInvalidTemplate: baremetal.PhaseFailed,
		plugin.SituationAddressesHeld: baremetal.PhaseReady,
		plugin.SituationRenderFailed:  baremetal.PhaseFailed, plugin.SituationClaimFailed: baremetal.PhaseFailed,
		plugin.SituationUnreachable: baremetal.PhaseFailed,
	}
	reason := map[plugin.Situation]string{
		plugin.SituationInvalidTemplate: baremetal.ReasonTemplateInvalid, plugin.SituationRenderFailed: baremetal.ReasonRenderFailed,
		plugin.SituationClaimFailed: baremetal.ReasonIPClaimFailed, plugin.SituationUnreachable: baremetal.ReasonEndpointUnreachable,
	}
	switch situation {
	case plugin.SituationPausedByCAPI, plugin.SituationBeingMoved:
		assert.True(c, decision.HeldByClusterAPI, "the controller does not hold the host off")
	case plugin.SituationPausedByOthers:
		assert.Equal(c, baremetal.PausedBySomeoneElse, decision.Ignored)
	case plugin.SituationNotHandedOver:
		assert.Equal(c, baremetal.NotHandedOver, decision.Ignored)
	default:
		require.Contains(c, phase, situation, "a situation explain covers and this test does not")
		assert.Equal(c, phase[situation], standing.Phase, "the controller's standing of the host")
		assert.Equal(c, reason[situation], standing.Reason, "the problem the controller recorded on the host")
		assert.Equal(c, situation == plugin.SituationStalled, standing.InspectionStalled)
	}
}

// manualPool is a Cluster API IPAM pool kind no provider of the suite
// serves: the tests play its provider by hand.
var manualPool = capm3.IPPoolReference{Name: "rack1", APIGroup: "ipam.cluster.x-k8s.io", Kind: "ManualIPPool"}

// clusterAPINetworkData takes the address and gateway of its one network
// from a Cluster API IPAM pool, and no DNS servers (dnsFromIPPool names
// only Metal3 IPPools).
func clusterAPINetworkData(pool capm3.IPPoolReference) *capm3.NetworkData {
	networkData := fixtures.PoolNetworkData("unused")
	network := &networkData.Networks.IPv4[0]
	network.IPAddressFromIPPool, network.FromPoolRef = "", pool
	network.Routes[0].Gateway = capm3.NetworkGatewayv4{FromPoolRef: pool}
	network.Routes[0].Services = nil
	return networkData
}

// serveAddressClaim does what a Cluster API IPAM provider does for a claim:
// an IPAddress owned by the claim, named in the claim's status.addressRef,
// and the claim Ready.
func serveAddressClaim(t *testing.T, ns, name, ip string) {
	t.Helper()
	ctx := context.Background()
	claim := &capipamv1.IPAddressClaim{}
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.NoError(c, k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, claim))
	}, waitTimeout, pollInterval)
	create(t, &capipamv1.IPAddress{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, OwnerReferences: []metav1.OwnerReference{{
			APIVersion: capipamv1.GroupVersion.String(), Kind: "IPAddressClaim", Name: claim.Name, UID: claim.UID,
		}}},
		Spec: capipamv1.IPAddressSpec{
			ClaimRef: capipamv1.IPAddressClaimReference{Name: claim.Name},
			PoolRef:  claim.Spec.PoolRef,
			Address:  ip, Prefix: ptr.To(int32(24)), Gateway: "10.0.0.1",
		},
	})
	claim.Status.AddressRef = capipamv1.IPAddressReference{Name: name}
	meta.SetStatusCondition(&claim.Status.Conditions, metav1.Condition{Type: capipamv1.IPAddressClaimReadyCondition,
		Status: metav1.ConditionTrue, Reason: "Allocated"})
	require.NoError(t, k8sClient.Status().Update(ctx, claim))
}

// TestPluginClusterAPIPool renders and explains a host whose template takes
// its address from a Cluster API IPAM pool: the controller's IPAddressClaim
// as it stands, an address of one's choice with its prefix and gateway,
// and, once the provider served the claim, what the controller wrote and
// what becomes of the address when CAPM3 provisions the host.
func TestPluginClusterAPIPool(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	racked := map[string]string{"rack": "r1"}
	create(t, fixtures.PreprovisioningTemplate(ns, "rack-r1", racked, clusterAPINetworkData(manualPool)),
		fixtures.Host(ns, "node-0", "52:54:00:aa:bb:01", racked))
	claimLine := "IPAddressClaim node-0-rack1 on ManualIPPool rack1: "

	// No API serves the pool's kind: the controller's message, with the fix.
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		out, err := runPlugin(t, "render", "node-0", "-n", ns)
		require.ErrorContains(c, err, `no API of the cluster serves kind "ManualIPPool" of apiGroup ipam.cluster.x-k8s.io`)
		assert.Contains(c, out, claimLine+"failed: no API of the cluster serves kind")
	}, waitTimeout, pollInterval)
	out, err := runPlugin(t, "explain", "node-0", "-n", ns)
	require.NoError(t, err)
	assert.Contains(t, out, "BareMetalHost "+ns+"/node-0: "+string(plugin.SituationClaimFailed))
	assert.Contains(t, out, "install the Cluster API IPAM provider of ManualIPPool")

	// An address of one's choice needs the prefix the provider would write.
	_, err = runPlugin(t, "render", "node-0", "-n", ns, "--address", "rack1=10.0.0.5")
	require.ErrorContains(t, err, `the prefix of an address of ManualIPPool "rack1" is its provider's`)
	require.ErrorContains(t, err, "rack1=10.0.0.5/<prefix>[,<gateway>]")
	out, err = runPlugin(t, "render", "node-0", "-n", ns, "--address", "rack1=10.0.0.5/24,10.0.0.1")
	require.NoError(t, err)
	assert.Contains(t, out, claimLine+"10.0.0.5/24, gateway 10.0.0.1")
	assert.Contains(t, out, `"ip_address": "10.0.0.5"`)
	assert.Contains(t, out, `"gateway": "10.0.0.1"`)

	serveAddressClaim(t, ns, "node-0-rack1", "10.0.0.7")
	waitForNetworkData(t, ns, "node-0")
	secret := &corev1.Secret{}
	require.NoError(t, k8sClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: baremetal.NetworkDataSecretName("node-0")}, secret))
	out, err = runPlugin(t, "render", "node-0", "-n", ns, "-o", "networkdata")
	require.NoError(t, err)
	assert.Equal(t, string(secret.Data[preprovv1.NetworkDataKey])+"\n", out)
	out, err = runPlugin(t, "render", "node-0", "-n", ns)
	require.NoError(t, err)
	assert.Contains(t, out, claimLine+"10.0.0.7/24, gateway 10.0.0.1\n")
	// What TestPluginRendersWhatTheControllerWrote passes to render -f.
	assert.Equal(t, map[string]string{"rack1": "10.0.0.7/24,10.0.0.1"}, hostAddresses(t, ns, "node-0"))

	require.EventuallyWithT(t, func(c *assert.CollectT) {
		out, err := runPlugin(t, "explain", "node-0", "-n", ns)
		require.NoError(c, err)
		assert.Contains(c, out, "BareMetalHost "+ns+"/node-0: "+string(plugin.SituationSetUp))
		assert.Contains(c, out, "Addresses (the host's claims on the pools of its template):\n  "+claimLine+"10.0.0.7/24, gateway 10.0.0.1\n")
		assert.Contains(c, out, "the OS gets CAPM3's own IPAddressClaim <Metal3Data>-rack1 on ManualIPPool rack1, so it gets a different address from this one")
		assert.Contains(c, out, "this claim stays for the host's lifetime")
	}, waitTimeout, pollInterval)
}
