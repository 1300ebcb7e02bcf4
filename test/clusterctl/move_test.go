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
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	capm3 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	clusterctlv1 "sigs.k8s.io/cluster-api/cmd/clusterctl/api/v1alpha3"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/baremetal"
	"github.com/capm3-preprov/capm3-preprov/test/framework"
	"github.com/capm3-preprov/capm3-preprov/test/framework/fixtures"
)

// Identities on both control planes, so their audit logs tell apart what
// our controllers, IPAM and clusterctl wrote.
const (
	managerUser    = "capm3-preprov-manager"
	ipamUser       = "ipam-standin"
	clusterctlUser = "clusterctl"
)

// moveAuditPolicy records every write of those identities, once complete.
var moveAuditPolicy = fmt.Sprintf(`apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived, ResponseStarted]
rules:
- level: Metadata
  users: [%q, %q, %q]
  verbs: [create, update, patch, delete, deletecollection]
- level: None
`, managerUser, ipamUser, clusterctlUser)

const (
	moveTimeout = time.Minute
	movePoll    = 100 * time.Millisecond
	// poolName is the pool every template of the moved namespace draws from.
	poolName = "provisioning"
	// clusterName is the Cluster the Metal3MachineTemplate mode hangs off;
	// fixtures.DataTemplate names it.
	clusterName = "preprov"
)

// The hosts of the moved namespace.
const (
	// Set up on the source, one per template source.
	machineTemplateHost = "worker-0"
	preprovTemplateHost = "rack-0"
	// Paused for us, selected by no template: still paused at the move.
	sparePausedHost = "spare-0"
	// Paused by CAPM3: never ours.
	capm3PausedHost = "capm3-0"
)

// controlPlane is one management cluster: the API server with an audit log,
// the garbage collector, and kubeconfigs of our identities.
type controlPlane struct {
	env         *framework.ControlPlane
	auditLog    string
	configs     map[string]*rest.Config
	kubeconfigs map[string][]byte
	// clusterctlKubeconfig is a file, for clusterctl's command line.
	clusterctlKubeconfig string
}

// TestMoveKeepsHostsAsTheyAre pivots a namespace of hosts with the real
// `clusterctl move` between two local control planes and checks, from the
// objects and from both API servers' audit logs, that:
//   - every host keeps its pause state, claims, addresses and Secret;
//   - our controller on the source, left running (the case a user forgets to
//     scale it down), writes nothing to the namespace while clusterctl
//     deletes it there, though it still serves other namespaces;
//   - our controller on the target adopts the set-up hosts without a write
//     to a host, claim, address, Secret or event (only our template's
//     status, which clusterctl does not copy, is rebuilt), sets up the host
//     that was still paused with a new address, and the garbage collector
//     follows the owner references clusterctl re-pointed to the new UIDs.
func TestMoveKeepsHostsAsTheyAre(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.ErrorLevel)))

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
	waitForTemplateStatus(ctx, t, src, ns, 1)
	before := readNamespace(ctx, t, src, ns)
	require.Len(t, before.claims, 2)
	assert.Equal(t, preprovv1.PausedForPreprovisioning, before.hosts[sparePausedHost].paused)
	assert.Equal(t, "metal3.io/capm3", before.hosts[capm3PausedHost].paused)

	// The move, with the source controller running.
	moveStart := time.Now()
	_, log, err := repo.run(ctx, nil, "move", "-v", "1", "--namespace", ns,
		"--kubeconfig", source.clusterctlKubeconfig, "--to-kubeconfig", target.clusterctlKubeconfig)
	require.NoError(t, err)
	moveTook := time.Since(moveStart)
	t.Logf("clusterctl move took %s:\n%s", moveTook.Round(time.Millisecond), log)

	// The source controller is alive and watching: it sets up a host of
	// another namespace. Then it is stopped, so all it wrote is logged.
	control := createControlNamespace(ctx, t, src)
	waitForSetUp(ctx, t, src, control, "control-0")
	require.NoError(t, sourceManager.Stop(), "the source manager did not exit cleanly")
	sourceWrites := writes(t, source.auditLog, managerUser, ns, moveStart, time.Now())
	assert.Empty(t, sourceWrites, "our controller on the source wrote to the namespace clusterctl was moving")
	assert.Empty(t, namespaceContents(ctx, t, src, ns), "left on the source")
	t.Logf("clusterctl wrote %d times to the source and %d times to the target",
		len(writes(t, source.auditLog, clusterctlUser, ns, moveStart, time.Now())),
		len(writes(t, target.auditLog, clusterctlUser, ns, moveStart, time.Now())))

	// What arrived: the hosts as they were, their claims (without status:
	// clusterctl drops it), addresses and Secrets, re-owned by the new UIDs.
	dst := target.env.Client
	moved := readNamespace(ctx, t, dst, ns)
	assertSameHosts(t, before, moved)
	for name, claim := range moved.claimObjects {
		assert.Nil(t, claim.Status.Address, "claim %s: clusterctl does not copy status", name)
		assertOwnedByHost(t, claim, moved.hostUIDs[hostOfClaim(name)])
	}
	for name, secret := range moved.secretObjects {
		assertOwnedByHost(t, secret, moved.hostUIDs[strings.TrimSuffix(name, preprovv1.NetworkDataSecretSuffix)])
	}
	for name := range moved.hosts {
		bmc := &corev1.Secret{}
		require.NoError(t, dst.Get(ctx, client.ObjectKey{Namespace: ns, Name: name + "-bmc-secret"}, bmc), "BMO's Secret moves with its host")
		assertOwnedByHost(t, bmc, moved.hostUIDs[name])
	}

	// IPAM on the target first gives every claim back its address (from the
	// IPAddress objects, by claim name), then our controller starts.
	stopTargetIPAM := startIPAMStandIn(t, target)
	defer stopTargetIPAM()
	waitForClaimAddresses(ctx, t, dst, ns, before.claimAddresses)
	adoptStart := time.Now()
	targetManager := startManagerProcess(t, target.kubeconfigs[managerUser], "target-manager")
	defer func() { assert.NoError(t, targetManager.Stop(), "the target manager did not exit cleanly") }()
	waitUntilSettled(ctx, t, targetManager, 2)
	waitForTemplateStatus(ctx, t, dst, ns, 1)
	t.Logf("our controller on the target settled %s after its start", time.Since(adoptStart).Round(time.Millisecond))

	// The still-paused host is set up on the target. Its event comes after
	// any the adoption would have sent (one recorder, in order), so what was
	// written before it is all the adoption wrote.
	barrier := time.Now()
	relabel(ctx, t, dst, ns, sparePausedHost, map[string]string{"rack": "r1"})
	waitForSetUp(ctx, t, dst, ns, sparePausedHost)

	adoptionWrites := writes(t, target.auditLog, managerUser, ns, adoptStart, barrier)
	var statusWrites, otherWrites []string
	for _, write := range adoptionWrites {
		if strings.Contains(write, " metal3preprovisioningtemplates/status ") {
			statusWrites = append(statusWrites, write)
		} else {
			otherWrites = append(otherWrites, write)
		}
	}
	assert.Empty(t, otherWrites, "our controller on the target wrote while adopting the moved hosts")
	assert.NotEmpty(t, statusWrites, "the template's status, which clusterctl drops, is rebuilt")
	t.Logf("our controller's writes on the target while adopting: %v", adoptionWrites)

	after := readNamespace(ctx, t, dst, ns)
	assertUnchanged(t, moved, after)
	spare := after.claimAddresses[sparePausedHost+"-"+poolName]
	require.NotEmpty(t, spare, "the spare host has an address on the target")
	for claim, address := range before.claimAddresses {
		assert.NotEqual(t, address, spare, "the spare host got the address of %s", claim)
	}

	// The garbage collector follows the re-pointed owner references.
	require.NoError(t, dst.Delete(ctx, &bmov1alpha1.BareMetalHost{ObjectMeta: metaIn(ns, machineTemplateHost)}))
	require.Eventually(t, func() bool {
		return isGone(ctx, dst, &ipamv1.IPClaim{}, ns, machineTemplateHost+"-"+poolName) &&
			isGone(ctx, dst, &corev1.Secret{}, ns, baremetal.NetworkDataSecretName(machineTemplateHost))
	}, moveTimeout, movePoll, "the deleted host's claim and Secret are collected")
}

// startManagementCluster starts a control plane with every CRD labelled as
// on a management cluster, the garbage collector, an audit log and our
// identities.
func startManagementCluster(t *testing.T, name string) *controlPlane {
	t.Helper()
	dir := t.TempDir()
	cp := &controlPlane{
		auditLog: filepath.Join(dir, "audit.log"),
		configs:  map[string]*rest.Config{}, kubeconfigs: map[string][]byte{},
	}
	env, err := framework.StartControlPlane(framework.StartControlPlaneInput{
		AuditPolicy: moveAuditPolicy, AuditLog: cp.auditLog, GarbageCollector: true,
	})
	require.NoError(t, err, "starting the %s control plane", name)
	t.Cleanup(func() { assert.NoError(t, env.Stop()) })
	cp.env = env
	labelCRDsForMove(t, env.Client)
	for _, user := range []string{managerUser, ipamUser, clusterctlUser} {
		config, kubeconfig, err := env.AddUser(user)
		require.NoError(t, err)
		cp.configs[user], cp.kubeconfigs[user] = config, kubeconfig
	}
	cp.clusterctlKubeconfig = filepath.Join(dir, "clusterctl.kubeconfig")
	require.NoError(t, os.WriteFile(cp.clusterctlKubeconfig, cp.kubeconfigs[clusterctlUser], 0o600))
	return cp
}

// labelCRDsForMove labels the CRDs as they are on a management cluster.
// clusterctl init puts clusterctl.cluster.x-k8s.io on every CRD it installs
// (CAPI's, CAPM3's, Metal3 IPAM's, ours, whose move label comes from its own
// manifest); clusterctl move only discovers kinds whose CRD has it. BMO is
// not a clusterctl provider: its users label BareMetalHost for a move with
// its hierarchy (what a host owns, our claims and Secret included) and
// HardwareData for a move, as CAPM3's pivot test does (labelBMOCRDs).
func labelCRDsForMove(t *testing.T, c client.Client) {
	t.Helper()
	ctx := context.Background()
	crds := &unstructured.UnstructuredList{}
	crds.SetAPIVersion("apiextensions.k8s.io/v1")
	crds.SetKind("CustomResourceDefinitionList")
	require.NoError(t, c.List(ctx, crds))
	for i := range crds.Items {
		crd := &crds.Items[i]
		group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
		add := map[string]string{clusterctlv1.ClusterctlLabel: ""}
		switch {
		case crd.GetName() == "baremetalhosts.metal3.io":
			add[clusterctlv1.ClusterctlMoveHierarchyLabel] = ""
		case crd.GetName() == "hardwaredata.metal3.io":
			add[clusterctlv1.ClusterctlMoveLabel] = ""
		case group == "metal3.io":
			continue
		}
		original := crd.DeepCopy()
		labels := crd.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		for key, value := range add {
			labels[key] = value
		}
		crd.SetLabels(labels)
		require.NoError(t, c.Patch(ctx, crd, client.MergeFrom(original)), "labelling %s", crd.GetName())
	}
}

// createMovedNamespace creates what a management cluster holds for
// preprovisioning: a Cluster (provisioned, as clusterctl move requires)
// owning the Metal3MachineTemplate and its Metal3DataTemplate, as CAPI and
// CAPM3 make it; a Metal3PreprovisioningTemplate; a pool without
// clusterName that a user labelled for the move (no Cluster owns it); and
// the hosts, each with the BMC Secret BMO owns.
func createMovedNamespace(ctx context.Context, t *testing.T, c client.Client) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "moved-"}}
	require.NoError(t, c.Create(ctx, ns))

	cluster := &clusterv1.Cluster{
		ObjectMeta: metaIn(ns.Name, clusterName),
		Spec:       clusterv1.ClusterSpec{ControlPlaneEndpoint: clusterv1.APIEndpoint{Host: "192.0.2.2", Port: 6443}},
	}
	require.NoError(t, c.Create(ctx, cluster))
	cluster.Status.Initialization.InfrastructureProvisioned = ptr.To(true)
	cluster.Status.Conditions = []metav1.Condition{{
		Type: clusterv1.ClusterControlPlaneInitializedCondition, Status: metav1.ConditionTrue,
		Reason: "Initialized", LastTransitionTime: metav1.Now(),
	}}
	require.NoError(t, c.Status().Update(ctx, cluster))
	ownedByCluster := []metav1.OwnerReference{{
		APIVersion: clusterv1.GroupVersion.String(), Kind: "Cluster", Name: cluster.Name, UID: cluster.UID,
	}}

	pool := fixtures.Pool(ns.Name, poolName, "192.0.2.10", "192.0.2.20", "192.0.2.1")
	pool.Labels = map[string]string{clusterctlv1.ClusterctlMoveLabel: ""}
	dataTemplate := fixtures.DataTemplate(ns.Name, "pooled", fixtures.PoolNetworkData(poolName))
	dataTemplate.OwnerReferences = ownedByCluster
	machineTemplate := fixtures.MachineTemplate(ns.Name, "workers", "pooled", map[string]string{"role": "worker"})
	machineTemplate.OwnerReferences = ownedByCluster
	objects := []client.Object{
		pool, dataTemplate, machineTemplate, fixtures.PreprovisioningTemplate(ns.Name, "rack-r1", map[string]string{"rack": "r1"}, fixtures.PoolNetworkData(poolName)),
		fixtures.Host(ns.Name, machineTemplateHost, "52:54:00:aa:00:01", map[string]string{"role": "worker"}),
		fixtures.Host(ns.Name, preprovTemplateHost, "52:54:00:aa:00:02", map[string]string{"rack": "r1"}),
		fixtures.Host(ns.Name, sparePausedHost, "52:54:00:aa:00:03", map[string]string{"rack": "r2"}),
	}
	capm3Paused := fixtures.Host(ns.Name, capm3PausedHost, "52:54:00:aa:00:04", map[string]string{"role": "worker"})
	capm3Paused.Annotations[preprovv1.PausedAnnotation] = "metal3.io/capm3"
	objects = append(objects, capm3Paused)
	for _, obj := range objects {
		require.NoError(t, c.Create(ctx, obj), "creating %T %s", obj, obj.GetName())
		if host, ok := obj.(*bmov1alpha1.BareMetalHost); ok {
			require.NoError(t, c.Create(ctx, bmcSecret(host)))
		}
	}
	return ns.Name
}

// createControlNamespace creates, on the source after the move, a host its
// controller must set up: proof that it was running all along.
func createControlNamespace(ctx context.Context, t *testing.T, c client.Client) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "control-"}}
	require.NoError(t, c.Create(ctx, ns))
	for _, obj := range []client.Object{
		fixtures.Pool(ns.Name, poolName, "198.51.100.10", "198.51.100.20", "198.51.100.1"),
		fixtures.PreprovisioningTemplate(ns.Name, "control", map[string]string{"rack": "control"}, fixtures.PoolNetworkData(poolName)),
		fixtures.Host(ns.Name, "control-0", "52:54:00:bb:00:01", map[string]string{"rack": "control"}),
	} {
		require.NoError(t, c.Create(ctx, obj), "creating %T %s", obj, obj.GetName())
	}
	return ns.Name
}

// bmcSecret is a host's BMC credentials as BMO holds them: labelled for its
// cache and owned by the host, so they move with it.
func bmcSecret(host *bmov1alpha1.BareMetalHost) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: host.Namespace, Name: host.Spec.BMC.CredentialsName,
			Labels: map[string]string{preprovv1.BMOSecretLabel: preprovv1.BMOSecretLabelValue},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: bmov1alpha1.GroupVersion.String(), Kind: "BareMetalHost", Name: host.Name, UID: host.UID,
			}},
		},
		StringData: map[string]string{"username": "admin", "password": "password"},
	}
}

// startIPAMStandIn runs Metal3 IPAM's stand-in as its own identity.
func startIPAMStandIn(t *testing.T, cp *controlPlane) func() {
	t.Helper()
	standIn, err := framework.StartIPAMStandIn(cp.configs[ipamUser])
	require.NoError(t, err)
	return func() { assert.NoError(t, standIn.Stop()) }
}

// waitForSetUp waits until a host is unpaused and points at its Secret, each
// of its claims has an address, and its set-up event is recorded.
func waitForSetUp(ctx context.Context, t *testing.T, c client.Client, namespace, name string) {
	t.Helper()
	require.EventuallyWithT(t, func(collect *assert.CollectT) {
		host := &bmov1alpha1.BareMetalHost{}
		require.NoError(collect, c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, host))
		require.NotContains(collect, host.Annotations, preprovv1.PausedAnnotation)
		require.Equal(collect, baremetal.NetworkDataSecretName(name), host.Spec.PreprovisioningNetworkDataName)
		require.NoError(collect, c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: host.Spec.PreprovisioningNetworkDataName}, &corev1.Secret{}))
		claim := &ipamv1.IPClaim{}
		require.NoError(collect, c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name + "-" + poolName}, claim))
		require.NotNil(collect, claim.Status.Address)
		events := &eventsv1.EventList{}
		require.NoError(collect, c.List(ctx, events, client.InNamespace(namespace)))
		found := false
		for _, event := range events.Items {
			found = found || (event.Regarding.Name == name && event.Reason == baremetal.ReasonNetworkDataSet)
		}
		require.True(collect, found, "no %s event on %s yet", baremetal.ReasonNetworkDataSet, name)
	}, moveTimeout, movePoll, "host %s/%s is never set up", namespace, name)
}

// waitForTemplateStatus waits until the namespace's template reports its
// ready hosts for its current generation.
func waitForTemplateStatus(ctx context.Context, t *testing.T, c client.Client, namespace string, ready int32) {
	t.Helper()
	require.EventuallyWithT(t, func(collect *assert.CollectT) {
		template := &preprovv1.Metal3PreprovisioningTemplate{}
		require.NoError(collect, c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "rack-r1"}, template))
		require.Equal(collect, template.Generation, template.Status.ObservedGeneration)
		require.Equal(collect, ptr.To(ready), template.Status.ReadyHosts)
	}, moveTimeout, movePoll, "the template's status never counts %d ready hosts", ready)
}

// waitForClaimAddresses waits until every claim points at its address again.
func waitForClaimAddresses(ctx context.Context, t *testing.T, c client.Client, namespace string, want map[string]string) {
	t.Helper()
	require.EventuallyWithT(t, func(collect *assert.CollectT) {
		require.Equal(collect, want, readNamespace(ctx, collect, c, namespace).claimAddresses)
	}, moveTimeout, movePoll, "IPAM on the target never gives the claims their addresses back")
}

// waitUntilSettled waits until the manager's queues are empty, nothing is
// being reconciled, and it counts this many hosts as Ready.
func waitUntilSettled(ctx context.Context, t *testing.T, m *framework.ManagerProcess, ready int) {
	t.Helper()
	require.EventuallyWithT(t, func(collect *assert.CollectT) {
		idle, phases, err := idle(ctx, m)
		require.NoError(collect, err)
		require.True(collect, idle, "queues not empty")
		require.Equal(collect, ready, int(phases[string(baremetal.PhaseReady)]), "hosts by phase: %v", phases)
	}, moveTimeout, movePoll, "our controller never settles")
}

func relabel(ctx context.Context, t *testing.T, c client.Client, namespace, name string, labels map[string]string) {
	t.Helper()
	host := &bmov1alpha1.BareMetalHost{}
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, host))
	original := host.DeepCopy()
	host.Labels = labels
	require.NoError(t, c.Patch(ctx, host, client.MergeFrom(original)))
}

// hostState is what a move must keep of a host.
type hostState struct {
	paused      string
	networkData string
	labels      map[string]string
}

// namespaceState is the hosts of a namespace and everything of theirs a move
// carries, by name.
type namespaceState struct {
	hosts    map[string]hostState
	hostUIDs map[string]types.UID
	// claims are the claims' names; claimAddresses the address each one's
	// status names, when it does.
	claims         []string
	claimAddresses map[string]string
	claimObjects   map[string]*ipamv1.IPClaim
	// addresses maps each IPAddress to its address and claim.
	addresses      map[string]string
	addressObjects map[string]*ipamv1.IPAddress
	secretData     map[string]map[string][]byte
	secretObjects  map[string]*corev1.Secret
	hostObjects    map[string]*bmov1alpha1.BareMetalHost
	templateNames  []string
}

func readNamespace(ctx context.Context, t require.TestingT, c client.Client, namespace string) namespaceState {
	state := namespaceState{
		hosts: map[string]hostState{}, hostUIDs: map[string]types.UID{}, hostObjects: map[string]*bmov1alpha1.BareMetalHost{},
		claimAddresses: map[string]string{}, claimObjects: map[string]*ipamv1.IPClaim{},
		addresses: map[string]string{}, addressObjects: map[string]*ipamv1.IPAddress{},
		secretData: map[string]map[string][]byte{}, secretObjects: map[string]*corev1.Secret{},
	}
	hosts := &bmov1alpha1.BareMetalHostList{}
	require.NoError(t, c.List(ctx, hosts, client.InNamespace(namespace)))
	for i := range hosts.Items {
		host := &hosts.Items[i]
		state.hosts[host.Name] = hostState{
			paused: host.Annotations[preprovv1.PausedAnnotation], networkData: host.Spec.PreprovisioningNetworkDataName, labels: host.Labels,
		}
		state.hostUIDs[host.Name] = host.UID
		state.hostObjects[host.Name] = host
	}
	addresses := &ipamv1.IPAddressList{}
	require.NoError(t, c.List(ctx, addresses, client.InNamespace(namespace)))
	for i := range addresses.Items {
		address := &addresses.Items[i]
		state.addresses[address.Name] = string(address.Spec.Address) + " for " + address.Spec.Claim.Name
		state.addressObjects[address.Name] = address
	}
	claims := &ipamv1.IPClaimList{}
	require.NoError(t, c.List(ctx, claims, client.InNamespace(namespace)))
	for i := range claims.Items {
		claim := &claims.Items[i]
		state.claims = append(state.claims, claim.Name)
		state.claimObjects[claim.Name] = claim
		if claim.Status.Address != nil {
			if address, ok := state.addressObjects[claim.Status.Address.Name]; ok {
				state.claimAddresses[claim.Name] = string(address.Spec.Address)
			}
		}
	}
	sort.Strings(state.claims)
	secrets := &corev1.SecretList{}
	require.NoError(t, c.List(ctx, secrets, client.InNamespace(namespace),
		client.MatchingLabels{preprovv1.ManagedLabel: preprovv1.ManagedLabelValue}))
	for i := range secrets.Items {
		secret := &secrets.Items[i]
		state.secretData[secret.Name] = secret.Data
		state.secretObjects[secret.Name] = secret
	}
	templates := &preprovv1.Metal3PreprovisioningTemplateList{}
	require.NoError(t, c.List(ctx, templates, client.InNamespace(namespace)))
	for _, template := range templates.Items {
		state.templateNames = append(state.templateNames, template.Name)
	}
	return state
}

// assertSameHosts compares a namespace before and after the move, by
// content: the objects are new, with new UIDs.
func assertSameHosts(t *testing.T, before, after namespaceState) {
	t.Helper()
	assert.Equal(t, before.hosts, after.hosts, "hosts: pause, network data, labels")
	assert.Equal(t, before.claims, after.claims, "claims")
	assert.Equal(t, before.addresses, after.addresses, "IPAddresses")
	assert.Equal(t, before.secretData, after.secretData, "network data Secrets")
	assert.Equal(t, before.templateNames, after.templateNames, "Metal3PreprovisioningTemplates")
	for name, host := range after.hostObjects {
		assert.NotEqual(t, before.hostUIDs[name], host.UID, "host %s is a new object", name)
	}
}

// assertUnchanged checks that nobody wrote a moved host, address or Secret
// since it arrived, and that the set-up hosts have no new claim. Claims
// change once: IPAM writes their status back.
func assertUnchanged(t *testing.T, moved, now namespaceState) {
	t.Helper()
	for name, host := range moved.hostObjects {
		if name == sparePausedHost {
			continue
		}
		assert.Equal(t, host.ResourceVersion, now.hostObjects[name].ResourceVersion, "host %s was written", name)
	}
	for name, address := range moved.addressObjects {
		require.Contains(t, now.addressObjects, name)
		assert.Equal(t, address.UID, now.addressObjects[name].UID, "IPAddress %s was replaced", name)
		assert.Equal(t, address.ResourceVersion, now.addressObjects[name].ResourceVersion, "IPAddress %s was written", name)
	}
	for name, secret := range moved.secretObjects {
		require.Contains(t, now.secretObjects, name)
		assert.Equal(t, secret.UID, now.secretObjects[name].UID, "Secret %s was replaced", name)
		assert.Equal(t, secret.ResourceVersion, now.secretObjects[name].ResourceVersion, "Secret %s was rewritten", name)
	}
	for name, claim := range moved.claimObjects {
		require.Contains(t, now.claimObjects, name)
		assert.Equal(t, claim.UID, now.claimObjects[name].UID, "claim %s was replaced", name)
	}
	claims := append(append([]string{}, moved.claims...), sparePausedHost+"-"+poolName)
	sort.Strings(claims)
	assert.Equal(t, claims, now.claims, "claims: the moved ones and the spare host's new one")
}

func assertOwnedByHost(t *testing.T, obj client.Object, hostUID types.UID) {
	t.Helper()
	require.NotEmpty(t, hostUID, "%T %s has no host", obj, obj.GetName())
	refs := obj.GetOwnerReferences()
	require.Len(t, refs, 1, "%T %s", obj, obj.GetName())
	assert.Equal(t, "BareMetalHost", refs[0].Kind)
	assert.Equal(t, hostUID, refs[0].UID, "%T %s: clusterctl re-points owner references to the new UIDs", obj, obj.GetName())
}

// hostOfClaim is the host of our claim "<host>-<pool>".
func hostOfClaim(claim string) string {
	return strings.TrimSuffix(claim, "-"+poolName)
}

// namespaceContents lists what of ours and of the hosts is left in a
// namespace.
func namespaceContents(ctx context.Context, t *testing.T, c client.Client, namespace string) []string {
	t.Helper()
	var left []string
	for _, list := range []client.ObjectList{
		&bmov1alpha1.BareMetalHostList{}, &ipamv1.IPClaimList{}, &ipamv1.IPAddressList{}, &ipamv1.IPPoolList{},
		&preprovv1.Metal3PreprovisioningTemplateList{}, &capm3.Metal3MachineTemplateList{}, &capm3.Metal3DataTemplateList{},
		&corev1.SecretList{}, &clusterv1.ClusterList{},
	} {
		require.NoError(t, c.List(ctx, list, client.InNamespace(namespace)))
		items, err := meta.ExtractList(list)
		require.NoError(t, err)
		for _, item := range items {
			object, err := meta.Accessor(item)
			require.NoError(t, err)
			left = append(left, fmt.Sprintf("%T %s", list, object.GetName()))
		}
	}
	return left
}

// writes lists the writes a user made to a namespace in [from, to), as
// "verb resource[/subresource] name (code)".
func writes(t *testing.T, auditLog, user, namespace string, from, to time.Time) []string {
	t.Helper()
	events, err := framework.ReadAuditLog(auditLog)
	require.NoError(t, err)
	var found []string
	for _, event := range events {
		if event.User.Username != user || !framework.IsWriteVerb(event.Verb) || event.ObjectRef == nil ||
			event.ObjectRef.Namespace != namespace || event.RequestReceived.Before(from) || !event.RequestReceived.Before(to) {
			continue
		}
		code := 0
		if event.ResponseStatus != nil {
			code = event.ResponseStatus.Code
		}
		found = append(found, fmt.Sprintf("%s %s %s (%d)", event.Verb, event.Resource(), event.ObjectRef.Name, code))
	}
	return found
}

func isGone(ctx context.Context, c client.Client, obj client.Object, namespace, name string) bool {
	return apierrors.IsNotFound(c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, obj))
}

func metaIn(namespace, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: namespace, Name: name}
}
