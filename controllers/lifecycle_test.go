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
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/baremetal"
	"github.com/capm3-preprov/capm3-preprov/ipam"
	"github.com/capm3-preprov/capm3-preprov/test/framework/fixtures"
)

// provisionedByCAPM3 creates what CAPM3 creates when it provisions a host:
// a Metal3Machine annotated with the host, the host's consumerRef, a
// Metal3DataClaim named like the Metal3Machine and the Metal3Data.
func provisionedByCAPM3(t *testing.T, ns, hostName, machineName, dataName string) *capm3.Metal3Data {
	t.Helper()
	ctx := context.Background()
	m3m := &capm3.Metal3Machine{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ns, Name: machineName,
			Annotations: map[string]string{"metal3.io/BareMetalHost": ns + "/" + hostName},
		},
		Spec: capm3.Metal3MachineSpec{DataTemplate: &capm3.Metal3ObjectRef{Name: "pooled"}},
	}
	if err := k8sClient.Create(ctx, m3m); !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
	host := getHost(t, ns, hostName)
	original := host.DeepCopy()
	host.Spec.ConsumerRef = &corev1.ObjectReference{
		APIVersion: capm3.GroupVersion.String(), Kind: "Metal3Machine", Namespace: ns, Name: machineName,
	}
	require.NoError(t, k8sClient.Patch(ctx, host, client.MergeFrom(original)))

	dataClaim := &capm3.Metal3DataClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: machineName},
		Spec:       capm3.Metal3DataClaimSpec{Template: &capm3.Metal3ObjectRef{Name: "pooled"}},
	}
	if err := k8sClient.Create(ctx, dataClaim); !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
	data := &capm3.Metal3Data{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: dataName},
		Spec: capm3.Metal3DataSpec{
			Index:    new(int32),
			Claim:    &capm3.Metal3ObjectRef{Name: machineName},
			Template: &capm3.Metal3ObjectRef{Name: "pooled"},
		},
	}
	require.NoError(t, k8sClient.Create(ctx, data))
	return data
}

func claimOf(t require.TestingT, ns, name string) *ipamv1.IPClaim {
	claim := &ipamv1.IPClaim{}
	require.NoError(t, k8sClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, claim))
	return claim
}

func metal3DataOwners(claim *ipamv1.IPClaim) []types.UID {
	var uids []types.UID
	for _, ref := range claim.OwnerReferences {
		if ref.Kind == "Metal3Data" {
			uids = append(uids, ref.UID)
		}
	}
	return uids
}

func TestHandoffToCAPM3KeepsTheAddressThroughReprovisioning(t *testing.T) {
	ns := newNamespace(t)
	createPooledWorkers(t, ns, "node-0")
	waitForNetworkData(t, ns, "node-0")
	before := claimOf(t, ns, "node-0-provisioning")
	address := before.Status.Address.Name

	// Provision: CAPM3 waits until our claim carries the Metal3Data's UID.
	data := provisionedByCAPM3(t, ns, "node-0", "workers-abc", "pooled-0")
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		claim := claimOf(c, ns, "node-0-provisioning")
		assert.Equal(c, []types.UID{data.UID}, metal3DataOwners(claim))
	}, waitTimeout, pollInterval)
	claim := claimOf(t, ns, "node-0-provisioning")
	for _, ref := range claim.OwnerReferences {
		assert.Nil(t, ref.Controller, "%s owner reference must not be a controller reference", ref.Kind)
		if ref.Kind == "Metal3Data" {
			assert.Equal(t, "infrastructure.cluster.x-k8s.io/v1beta2", ref.APIVersion)
			assert.Equal(t, "pooled-0", ref.Name)
		}
	}
	assert.Equal(t, before.UID, claim.UID)
	assert.Equal(t, address, claim.Status.Address.Name, "the address changed on provisioning")
	assert.NotContains(t, claim.Labels, "infrastructure.cluster.x-k8s.io/data-name")
	assert.NotContains(t, claim.Labels, "infrastructure.cluster.x-k8s.io/pool-name")

	// Deprovision: the Metal3Data goes, its owner reference goes, the claim
	// and its address stay.
	require.NoError(t, k8sClient.Delete(context.Background(), data))
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Empty(c, metal3DataOwners(claimOf(c, ns, "node-0-provisioning")))
	}, waitTimeout, pollInterval)
	claim = claimOf(t, ns, "node-0-provisioning")
	assert.Equal(t, before.UID, claim.UID)
	assert.Equal(t, address, claim.Status.Address.Name, "the address changed on deprovisioning")

	// Re-provision: a Metal3Data of the same name, with a new UID.
	again := provisionedByCAPM3(t, ns, "node-0", "workers-abc", "pooled-0")
	require.NotEqual(t, data.UID, again.UID)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Equal(c, []types.UID{again.UID}, metal3DataOwners(claimOf(c, ns, "node-0-provisioning")))
	}, waitTimeout, pollInterval)
	claim = claimOf(t, ns, "node-0-provisioning")
	assert.Equal(t, before.UID, claim.UID)
	assert.Equal(t, address, claim.Status.Address.Name, "the address changed on re-provisioning")
}

func TestDeletingAHostReleasesItsClaimsAddressesAndSecret(t *testing.T) {
	for _, family := range ipamFamilies {
		t.Run(family.name, func(t *testing.T) {
			ns := newNamespace(t)
			rack := createRack(t, family, ns, "r1", "provisioning", "192.0.2.10", "192.0.2.20")
			create(t, rackHosts(ns, rack, 0, "node-0")...)
			waitForNetworkData(t, ns, "node-0")
			address := family.claim(t, ns, "node-0-provisioning").address

			require.NoError(t, k8sClient.Delete(context.Background(), getHost(t, ns, "node-0")))
			require.EventuallyWithT(t, func(c *assert.CollectT) {
				assert.True(c, family.claimGone(ns, "node-0-provisioning"), "the claim is still there")
				assert.True(c, family.addressGone(ns, address), "the address is still there")
				assert.True(c, isGone(ns, "node-0-preprov-networkdata", &corev1.Secret{}), "the Secret is still there")
			}, waitTimeout, pollInterval)
		})
	}
}

func getTemplate(t require.TestingT, ns, name string) *preprovv1.Metal3PreprovisioningTemplate {
	template := &preprovv1.Metal3PreprovisioningTemplate{}
	require.NoError(t, k8sClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, template))
	return template
}

func templateReady(t require.TestingT, template *preprovv1.Metal3PreprovisioningTemplate) metav1.Condition {
	for _, condition := range template.Status.Conditions {
		if condition.Type == preprovv1.ReadyCondition {
			return condition
		}
	}
	require.Fail(t, "no Ready condition")
	return metav1.Condition{}
}

func TestTemplateStatusCountsItsHosts(t *testing.T) {
	ns := newNamespace(t)
	racked := map[string]string{"rack": "r1"}
	create(t,
		fixtures.Pool(ns, "tiny", "192.0.2.10", "192.0.2.11", "192.0.2.1"),
		fixtures.PreprovisioningTemplate(ns, "rack-r1", racked, fixtures.PoolNetworkData("tiny")),
		fixtures.Host(ns, "node-0", "52:54:00:aa:bb:01", racked),
		fixtures.Host(ns, "node-1", "52:54:00:aa:bb:02", racked),
	)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		template := getTemplate(c, ns, "rack-r1")
		assert.Equal(c, template.Generation, template.Status.ObservedGeneration)
		assert.Equal(c, ptr.To(int32(2)), template.Status.MatchedHosts)
		assert.Equal(c, ptr.To(int32(2)), template.Status.ReadyHosts)
		ready := templateReady(c, template)
		assert.Equal(c, metav1.ConditionTrue, ready.Status)
		assert.Equal(c, preprovv1.ReadyReason, ready.Reason)
	}, waitTimeout, pollInterval)

	// A third host finds the pool exhausted; a fourth is also selected by a
	// Metal3MachineTemplate.
	both := map[string]string{"rack": "r1", "role": "worker"}
	create(t,
		fixtures.Host(ns, "node-2", "52:54:00:aa:bb:03", racked),
		fixtures.DataTemplate(ns, "static", fixtures.StaticNetworkData()),
		fixtures.MachineTemplate(ns, "workers", "static", workers),
		fixtures.Host(ns, "node-3", "52:54:00:aa:bb:04", both),
	)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		template := getTemplate(c, ns, "rack-r1")
		assert.Equal(c, ptr.To(int32(4)), template.Status.MatchedHosts)
		assert.Equal(c, ptr.To(int32(2)), template.Status.ReadyHosts)
		assert.Equal(c, ptr.To(int32(1)), template.Status.FailedHosts)
		assert.Equal(c, ptr.To(int32(1)), template.Status.ConflictingHosts)
		ready := templateReady(c, template)
		assert.Equal(c, metav1.ConditionFalse, ready.Status)
		assert.Equal(c, preprovv1.HostsConflictingReason, ready.Reason)
	}, waitTimeout, pollInterval)

	// A template that cannot work says so.
	broken := fixtures.PreprovisioningTemplate(ns, "broken", map[string]string{"rack": "r9"}, nil)
	broken.Spec.DataTemplateRef = &corev1.LocalObjectReference{Name: "absent"}
	create(t, broken)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		ready := templateReady(c, getTemplate(c, ns, "broken"))
		assert.Equal(c, preprovv1.InvalidTemplateReason, ready.Reason)
		assert.Contains(c, ready.Message, `Metal3DataTemplate "absent"`)
	}, waitTimeout, pollInterval)

	// So does one whose Metal3DataTemplate has network data no host can use.
	undefinedLink := fixtures.PoolNetworkData("tiny")
	undefinedLink.Networks.IPv4[0].Link = "bond0"
	badData := fixtures.PreprovisioningTemplate(ns, "bad-data", map[string]string{"rack": "r8"}, nil)
	badData.Spec.DataTemplateRef = &corev1.LocalObjectReference{Name: "undefined-link"}
	create(t, fixtures.DataTemplate(ns, "undefined-link", undefinedLink), badData)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		ready := templateReady(c, getTemplate(c, ns, "bad-data"))
		assert.Equal(c, preprovv1.InvalidTemplateReason, ready.Reason)
		assert.Contains(c, ready.Message, "bond0")
	}, waitTimeout, pollInterval)
}

// The status is computed from a cached template: when the cache is behind
// an earlier status write, the patch leaves out a field that looks unchanged.
// The write after it brings the template back, and the status is put right.
func TestTemplateStatusWrittenFromAStaleCacheIsPutRight(t *testing.T) {
	ns := newNamespace(t)
	setUpRackedHost(t, ns)
	matchedOne := func(c *assert.CollectT) {
		assert.Equal(c, int32(1), ptr.Deref(getTemplate(c, ns, "rack-r1").Status.MatchedHosts, -1))
	}
	require.EventuallyWithT(t, matchedOne, waitTimeout, pollInterval)

	// What a patch computed against a stale copy leaves on the server.
	template := getTemplate(t, ns, "rack-r1")
	original := template.DeepCopy()
	template.Status.MatchedHosts = ptr.To(int32(7))
	require.NoError(t, k8sClient.Status().Patch(context.Background(), template, client.MergeFrom(original)))

	require.EventuallyWithT(t, matchedOne, waitTimeout, pollInterval)
}

func TestHostsNoLongerSelectedAreOrphanedNotUndone(t *testing.T) {
	ns := newNamespace(t)
	racked := map[string]string{"rack": "r1"}
	create(t,
		fixtures.Pool(ns, "provisioning", "192.0.2.10", "192.0.2.20", "192.0.2.1"),
		fixtures.PreprovisioningTemplate(ns, "rack-r1", racked, fixtures.PoolNetworkData("provisioning")),
		fixtures.Host(ns, "node-0", "52:54:00:aa:bb:01", racked),
		fixtures.Host(ns, "node-1", "52:54:00:aa:bb:02", racked),
	)
	before := map[string]map[string]any{}
	for _, name := range []string{"node-0", "node-1"} {
		before[name] = waitForNetworkData(t, ns, name)
	}

	// node-0 leaves the rack: orphaned, and the template counts it.
	host := getHost(t, ns, "node-0")
	original := host.DeepCopy()
	host.Labels["rack"] = "r2"
	require.NoError(t, k8sClient.Patch(context.Background(), host, client.MergeFrom(original)))
	waitForEvent(t, ns, "node-0", baremetal.ReasonOrphaned)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		template := getTemplate(c, ns, "rack-r1")
		assert.Equal(c, int32(1), ptr.Deref(template.Status.OrphanedHosts, -1), "orphaned")
		assert.Equal(c, int32(1), ptr.Deref(template.Status.MatchedHosts, -1), "matched")
	}, waitTimeout, pollInterval)

	// The template goes: node-1 is orphaned too.
	require.NoError(t, k8sClient.Delete(context.Background(), getTemplate(t, ns, "rack-r1")))
	waitForEvent(t, ns, "node-1", baremetal.ReasonOrphaned)

	for _, name := range []string{"node-0", "node-1"} {
		assert.Equal(t, before[name], readNetworkData(t, ns, name), "%s lost its network data", name)
		host := getHost(t, ns, name)
		assert.NotContains(t, host.Annotations, preprovv1.PausedAnnotation, "%s was paused again", name)
		assert.Equal(t, preprovv1.ManagedLabelValue, host.Labels[preprovv1.ManagedLabel])
		claim := claimOf(t, ns, name+"-provisioning")
		assert.NotNil(t, claim.Status.Address, "%s lost its address", name)
	}
}

func TestProvisionedHostsReportDriftUnlessAskedToUpdate(t *testing.T) {
	ns := newNamespace(t)
	racked := map[string]string{"rack": "r1"}
	create(t,
		fixtures.PreprovisioningTemplate(ns, "rack-r1", racked, fixtures.StaticNetworkData()),
		fixtures.Host(ns, "node-0", "52:54:00:aa:bb:01", racked),
	)
	before := waitForNetworkData(t, ns, "node-0")
	host := getHost(t, ns, "node-0")
	host.Status.Provisioning.State = bmov1alpha1.StateProvisioned
	require.NoError(t, k8sClient.Status().Update(context.Background(), host))

	setMTU := func(mtu int32, policy preprovv1.ProvisionedHostPolicy) {
		template := getTemplate(t, ns, "rack-r1")
		original := template.DeepCopy()
		template.Spec.NetworkData.Links.Ethernets[0].MTU = mtu
		template.Spec.ProvisionedHostPolicy = policy
		require.NoError(t, k8sClient.Patch(context.Background(), template, client.MergeFrom(original)))
	}
	mtuOf := func(c require.TestingT) any {
		return readNetworkData(c, ns, "node-0")["links"].([]any)[0].(map[string]any)["mtu"]
	}

	// Default policy: drift is reported, the Secret is left alone.
	setMTU(9000, preprovv1.ProvisionedHostReportDrift)
	waitForEvent(t, ns, "node-0", baremetal.ReasonNetworkDataDrift)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		template := getTemplate(c, ns, "rack-r1")
		for _, condition := range template.Status.Conditions {
			if condition.Type == preprovv1.NetworkDataUpToDateCondition {
				assert.Equal(c, preprovv1.DriftedReason, condition.Reason)
			}
		}
	}, waitTimeout, pollInterval)
	assert.Equal(t, before, readNetworkData(t, ns, "node-0"))

	// The host asks to be re-rendered once.
	host = getHost(t, ns, "node-0")
	original := host.DeepCopy()
	host.Annotations[preprovv1.RerenderAnnotation] = "true"
	require.NoError(t, k8sClient.Patch(context.Background(), host, client.MergeFrom(original)))
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.InDelta(c, 9000, mtuOf(c), 0)
		assert.NotContains(c, getHost(c, ns, "node-0").Annotations, preprovv1.RerenderAnnotation)
	}, waitTimeout, pollInterval)

	// Policy Update: provisioned hosts follow the template.
	setMTU(1400, preprovv1.ProvisionedHostUpdate)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.InDelta(c, 1400, mtuOf(c), 0)
	}, waitTimeout, pollInterval)
}

func TestPoolPreallocationsBackstop(t *testing.T) {
	ns := newNamespace(t)
	pool := fixtures.Pool(ns, "provisioning", "192.0.2.10", "192.0.2.20", "192.0.2.1")
	pool.Spec.PreAllocations = map[string]ipamv1.IPAddressStr{"someone-else": "192.0.2.20"}
	create(t,
		pool,
		fixtures.DataTemplate(ns, "pooled", fixtures.PoolNetworkData("provisioning")),
		fixtures.MachineTemplate(ns, "workers", "pooled", workers),
		fixtures.Host(ns, "node-0", "52:54:00:aa:bb:01", workers),
	)
	ip := waitForNetworkData(t, ns, "node-0")["networks"].([]any)[0].(map[string]any)["ip_address"]

	// The manager runs without the backstop; one with it records the
	// address: the host's reconcile queues it, and the pool's next write
	// records it.
	manager, writes := countingHostManager(t, false)
	manager.Preallocations = &ipam.Preallocations{Client: manager.Client}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = manager.Preallocations.Start(ctx) }()
	outcome, err := manager.Reconcile(ctx, getHost(t, ns, "node-0"))
	require.NoError(t, err)
	assert.Equal(t, baremetal.PhaseReady, outcome.Phase)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		require.NoError(c, k8sClient.Get(ctx, client.ObjectKeyFromObject(pool), pool))
		assert.Equal(c, ip, string(pool.Spec.PreAllocations["node-0-provisioning"]))
	}, waitTimeout, pollInterval)
	assert.Equal(t, []string{"patch IPPool: 1"}, writes.Writes())
	assert.NotContains(t, pool.Annotations, preprovv1.PreallocatedForAnnotation, "the entry is ours by its field manager alone")

	writes.(interface{ Reset() }).Reset()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		cached := &ipamv1.IPPool{}
		require.NoError(c, manager.Client.Get(ctx, client.ObjectKeyFromObject(pool), cached))
		assert.Contains(c, cached.Spec.PreAllocations, "node-0-provisioning")
	}, waitTimeout, pollInterval)
	_, err = manager.Reconcile(ctx, getHost(t, ns, "node-0"))
	require.NoError(t, err)
	assert.Never(t, func() bool { return len(writes.Writes()) > 0 }, 2*ipam.PoolEntryWindow, pollInterval,
		"the backstop wrote an unchanged entry again")

	// The host goes: its entry goes, the user's stays.
	require.NoError(t, k8sClient.Delete(context.Background(), getHost(t, ns, "node-0")))
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		require.NoError(c, k8sClient.Get(context.Background(), client.ObjectKeyFromObject(pool), pool))
		assert.Equal(c, map[string]ipamv1.IPAddressStr{"someone-else": "192.0.2.20"}, pool.Spec.PreAllocations)
		assert.NotContains(c, pool.Annotations, preprovv1.PreallocatedForAnnotation)
	}, waitTimeout, pollInterval)
}

// An entry of ours that lands once its host is gone, after the host's own
// sweep read the pool, goes on the pool's event: the backstop's writes are
// queued, and the host may be deleted meanwhile.
func TestAnEntryRecordedAfterItsHostWentIsSwept(t *testing.T) {
	ns := newNamespace(t)
	pool := fixtures.Pool(ns, "provisioning", "192.0.2.10", "192.0.2.20", "192.0.2.1")
	create(t, pool)
	patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"preAllocations":{"gone-provisioning":"192.0.2.10"}}}`))
	require.NoError(t, k8sClient.Patch(context.Background(), pool, patch, client.FieldOwner(preprovv1.PreallocationsFieldManager)))
	users := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"preAllocations":{"absent-provisioning":"192.0.2.11"}}}`))
	require.NoError(t, k8sClient.Patch(context.Background(), pool, users))
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		require.NoError(c, k8sClient.Get(context.Background(), client.ObjectKeyFromObject(pool), pool))
		assert.Equal(c, map[string]ipamv1.IPAddressStr{"absent-provisioning": "192.0.2.11"}, pool.Spec.PreAllocations,
			"ours goes, the user's entry stays")
	}, waitTimeout, pollInterval)
}

func TestPreallocationSweepRemovesEntriesOfHostsDeletedWhileDown(t *testing.T) {
	ns := newNamespace(t)
	pool := fixtures.Pool(ns, "provisioning", "192.0.2.10", "192.0.2.20", "192.0.2.1")
	pool.Spec.PreAllocations = map[string]ipamv1.IPAddressStr{
		"ghost-provisioning": "192.0.2.10", "alive-provisioning": "192.0.2.11", "users-provisioning": "192.0.2.12",
	}
	pool.Annotations = map[string]string{preprovv1.PreallocatedForAnnotation: `["alive-provisioning","ghost-provisioning"]`}
	alive := fixtures.Host(ns, "alive", "52:54:00:aa:bb:01", nil)
	delete(alive.Annotations, preprovv1.PausedAnnotation)
	create(t, pool, alive)

	sweeper := &ipam.Sweeper{Client: k8sClient, APIReader: k8sClient}
	require.NoError(t, sweeper.Sweep(context.Background(), ""))
	require.NoError(t, k8sClient.Get(context.Background(), client.ObjectKeyFromObject(pool), pool))
	assert.Equal(t, map[string]ipamv1.IPAddressStr{"alive-provisioning": "192.0.2.11", "users-provisioning": "192.0.2.12"},
		pool.Spec.PreAllocations)
	assert.Equal(t, `["alive-provisioning"]`, pool.Annotations[preprovv1.PreallocatedForAnnotation])
}

func TestOnlyAnAdoptingTemplateTakesHostsThatAreNotPaused(t *testing.T) {
	ns := newNamespace(t)
	racked := map[string]string{"rack": "r1"}
	existing := fixtures.Host(ns, "existing", "52:54:00:aa:bb:01", racked)
	delete(existing.Annotations, preprovv1.PausedAnnotation)
	create(t, fixtures.PreprovisioningTemplate(ns, "rack-r1", racked, fixtures.StaticNetworkData()), existing)

	manager, writes := countingHostManager(t, false)
	outcome, err := manager.Reconcile(context.Background(), getHost(t, ns, "existing"))
	require.NoError(t, err)
	assert.Equal(t, baremetal.PhaseIgnored, outcome.Phase, "installing the controller must not change an existing fleet")
	assert.Empty(t, writes.Writes())

	template := getTemplate(t, ns, "rack-r1")
	original := template.DeepCopy()
	template.Spec.AdoptExistingHosts = true
	require.NoError(t, k8sClient.Patch(context.Background(), template, client.MergeFrom(original)))
	waitForNetworkData(t, ns, "existing")
	assert.Equal(t, "Metal3PreprovisioningTemplate/rack-r1", getHost(t, ns, "existing").Annotations[preprovv1.TemplateAnnotation])
}
