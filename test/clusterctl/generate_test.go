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
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clusterctlv1 "sigs.k8s.io/cluster-api/cmd/clusterctl/api/v1alpha3"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/baremetal"
	"github.com/capm3-preprov/capm3-preprov/controllers"
	"github.com/capm3-preprov/capm3-preprov/test/framework"
	"github.com/capm3-preprov/capm3-preprov/test/framework/fixtures"
)

// flavor is what a generated cluster of one flavor must be.
type flavor struct {
	name string
	// kinds of the generated objects, in order.
	kinds []string
	// templateOf names the template ("<Kind>/<name>") that preprovisions a
	// host of each role.
	templateOf map[string]string
	// ramdiskAddresses is the range a host's ramdisk address comes from.
	ramdiskAddresses [2]string
	// poolClusterNames tells, for each pool, whether it sets clusterName.
	poolClusterNames map[string]bool
}

var flavors = []flavor{{
	name: "dhcpless",
	kinds: []string{"Cluster", "Metal3Cluster", "IPPool", "KubeadmControlPlane",
		"Metal3MachineTemplate", "Metal3DataTemplate", "MachineDeployment", "KubeadmConfigTemplate",
		"Metal3MachineTemplate", "Metal3DataTemplate"},
	templateOf: map[string]string{
		"control-plane": "Metal3MachineTemplate/edge-controlplane",
		"worker":        "Metal3MachineTemplate/edge-workers",
	},
	ramdiskAddresses: [2]string{"192.168.111.100", "192.168.111.199"},
	// Claimed from before the Cluster exists, so no clusterName.
	poolClusterNames: map[string]bool{"edge-provisioning": false},
}, {
	name: "preprov-template",
	kinds: []string{"Cluster", "Metal3Cluster", "IPPool", "KubeadmControlPlane",
		"Metal3MachineTemplate", "Metal3DataTemplate", "MachineDeployment", "KubeadmConfigTemplate",
		"Metal3MachineTemplate", "Metal3DataTemplate", "IPPool", "Metal3PreprovisioningTemplate"},
	templateOf: map[string]string{
		"control-plane": "Metal3PreprovisioningTemplate/edge-preprovisioning",
		"worker":        "Metal3PreprovisioningTemplate/edge-preprovisioning",
	},
	ramdiskAddresses: [2]string{"192.168.111.20", "192.168.111.99"},
	// Only the preprovisioning pool is claimed from before the Cluster exists.
	poolClusterNames: map[string]bool{"edge-provisioning": true, "edge-preprovisioning": false},
}}

// TestGeneratedClusters generates a cluster with each flavor and creates
// every object on a control plane with the CRDs of CAPI, the kubeadm
// providers, CAPM3, Metal3 IPAM and ours; strict field validation rejects a
// field the CRDs do not know instead of dropping it. Then our controllers
// and the IPAM stand-in run, and paused hosts labelled for the cluster must
// get their ramdisk's network data from the template and pool the flavor
// says.
//
// The subtests are phases in order (the flavors are accepted before the
// controllers start), so neither they nor the test run in parallel.
func TestGeneratedClusters(t *testing.T) {
	env, err := framework.StartControlPlane(framework.StartControlPlaneInput{})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, env.Stop()) })
	_, err = crenvtest.InstallCRDs(env.Config, crenvtest.CRDInstallOptions{
		Paths: []string{
			filepath.Join(repo.capiDir, "controlplane", "kubeadm", "config", "crd", "bases"),
			filepath.Join(repo.capiDir, "bootstrap", "kubeadm", "config", "crd", "bases"),
		},
		ErrorIfPathMissing: true,
	})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	for _, f := range flavors {
		t.Run(f.name+"/accepted", func(t *testing.T) {
			require.NoError(t, env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: f.name}}))
			objects := generate(ctx, t, f.name)
			var kinds []string
			for _, obj := range objects {
				kinds = append(kinds, obj.GetKind())
				assert.Equal(t, f.name, obj.GetNamespace(), "%s %s", obj.GetKind(), obj.GetName())
				require.NoError(t, env.Client.Create(ctx, obj, client.FieldValidation("Strict")), "%s %s", obj.GetKind(), obj.GetName())
			}
			assert.Equal(t, f.kinds, kinds)
			for _, template := range ofKind(objects, "Metal3MachineTemplate") {
				url, _, _ := unstructured.NestedString(template.Object, "spec", "template", "spec", "image", "url")
				assert.Equal(t, "http://10.0.0.1/node.qcow2", url, "IMAGE_URL from the environment")
			}
			clusterNames := map[string]bool{}
			for _, pool := range ofKind(objects, "IPPool") {
				_, set, _ := unstructured.NestedString(pool.Object, "spec", "clusterName")
				clusterNames[pool.GetName()] = set
				// No Cluster owns a pool without clusterName: clusterctl move
				// takes it only with this label.
				_, moves := pool.GetLabels()[clusterctlv1.ClusterctlMoveLabel]
				assert.Equal(t, !set, moves, "IPPool %s: label %s", pool.GetName(), clusterctlv1.ClusterctlMoveLabel)
			}
			assert.Equal(t, f.poolClusterNames, clusterNames)
		})
	}

	startControllers(ctx, t, env)
	for _, f := range flavors {
		t.Run(f.name+"/preprovisions", func(t *testing.T) {
			for i, role := range []string{"control-plane", "worker"} {
				host := pausedHost(f.name, role, i)
				require.NoError(t, env.Client.Create(ctx, host))
				networkData := waitForNetworkData(t, env.Client, host)
				assertRamdiskNetwork(t, networkData, host.Spec.BootMACAddress, f.ramdiskAddresses)

				require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(host), host))
				assert.Equal(t, f.templateOf[role], host.Annotations[preprovv1.TemplateAnnotation], role)
			}
		})
	}
}

// generate runs clusterctl generate cluster "edge" with a flavor into
// namespace, with IMAGE_URL set in its environment.
func generate(ctx context.Context, t *testing.T, flavor string) []*unstructured.Unstructured {
	t.Helper()
	out, _, err := repo.run(ctx, map[string]string{"IMAGE_URL": "http://10.0.0.1/node.qcow2"},
		"generate", "cluster", "edge", "--infrastructure", providerName+":"+providerVersion,
		"--target-namespace", flavor, "--flavor", flavor,
		"--kubernetes-version", "v1.35.4", "--control-plane-machine-count", "3", "--worker-machine-count", "2")
	require.NoError(t, err)
	file := filepath.Join(t.TempDir(), "cluster.yaml")
	require.NoError(t, os.WriteFile(file, []byte(out), 0o600))
	objects, err := framework.ReadObjects(file)
	require.NoError(t, err)
	return objects
}

// startControllers runs our controllers and the IPAM stand-in until the
// test ends.
func startControllers(ctx context.Context, t *testing.T, env *framework.ControlPlane) {
	t.Helper()
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.ErrorLevel)))
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{
		Scheme:  env.Scheme,
		Cache:   controllers.CacheOptions("", ""),
		Metrics: metricsserver.Options{BindAddress: "0"},
	})
	require.NoError(t, err)
	require.NoError(t, controllers.Setup(ctx, mgr, controllers.Options{}))
	managerCtx, stop := context.WithCancel(ctx)
	standIn, err := framework.StartIPAMStandIn(env.Config)
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(managerCtx) }()
	t.Cleanup(func() {
		stop()
		assert.NoError(t, <-done)
		assert.NoError(t, standIn.Stop())
	})
}

// pausedHost is a host registered for the cluster "edge" in a role, paused
// for capm3-preprov, never inspected.
func pausedHost(namespace, role string, i int) *bmov1alpha1.BareMetalHost {
	return fixtures.Host(namespace, role+"-0", fmt.Sprintf("00:5c:52:31:3a:%02x", i), map[string]string{"cluster": "edge", "role": role})
}

// waitForNetworkData waits until the host is unpaused and points at its
// Secret, and returns the Secret's network data, decoded.
func waitForNetworkData(t *testing.T, c client.Client, host *bmov1alpha1.BareMetalHost) map[string]any {
	t.Helper()
	var networkData map[string]any
	require.EventuallyWithT(t, func(collect *assert.CollectT) {
		current := &bmov1alpha1.BareMetalHost{}
		require.NoError(collect, c.Get(context.Background(), client.ObjectKeyFromObject(host), current))
		require.NotContains(collect, current.Annotations, preprovv1.PausedAnnotation)
		require.Equal(collect, baremetal.NetworkDataSecretName(host.Name), current.Spec.PreprovisioningNetworkDataName)
		var err error
		networkData, err = framework.NetworkData(context.Background(), c, host.Namespace, host.Name)
		require.NoError(collect, err)
	}, 30*time.Second, 50*time.Millisecond)
	return networkData
}

// assertRamdiskNetwork checks the one link and the one IPv4 network the
// flavors give the ramdisk: the boot MAC before inspection, an address in
// the pool's range, the pool's gateway and DNS server.
func assertRamdiskNetwork(t *testing.T, networkData map[string]any, bootMAC string, addresses [2]string) {
	t.Helper()
	var document struct {
		Links []struct {
			MAC string `json:"ethernet_mac_address"`
		} `json:"links"`
		Networks []struct {
			IPAddress string `json:"ip_address"`
			Netmask   string `json:"netmask"`
			Routes    []struct {
				Gateway string `json:"gateway"`
			} `json:"routes"`
		} `json:"networks"`
		Services []struct {
			Address string `json:"address"`
		} `json:"services"`
	}
	raw, err := json.Marshal(networkData)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &document))

	require.Len(t, document.Links, 1)
	assert.Equal(t, bootMAC, document.Links[0].MAC)
	require.Len(t, document.Networks, 1)
	network := document.Networks[0]
	address, err := netip.ParseAddr(network.IPAddress)
	require.NoError(t, err)
	assert.True(t, address.Compare(netip.MustParseAddr(addresses[0])) >= 0 &&
		address.Compare(netip.MustParseAddr(addresses[1])) <= 0, "%s in %v", address, addresses)
	assert.Equal(t, "255.255.255.0", network.Netmask)
	require.Len(t, network.Routes, 1)
	assert.Equal(t, "192.168.111.1", network.Routes[0].Gateway)
	require.Len(t, document.Services, 1)
	assert.Equal(t, "192.168.111.1", document.Services[0].Address)
}

func ofKind(objects []*unstructured.Unstructured, kind string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, obj := range objects {
		if obj.GetKind() == kind {
			out = append(out, obj)
		}
	}
	return out
}
