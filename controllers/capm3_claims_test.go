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
	"testing"

	capm3 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/baremetal"
	"github.com/capm3-preprov/capm3-preprov/test/framework/fixtures"
)

// capm3Claim is the claim CAPM3's DataManager.ensureM3IPClaim creates with
// --enable-bmh-name-based-preallocation: "<bmh>-<pool>", controlled by the
// Metal3Data, with CAPM3's data-name and pool-name labels.
func capm3Claim(ns, name, pool string, data *capm3.Metal3Data) *ipamv1.IPClaim {
	return &ipamv1.IPClaim{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ns, Name: name,
			Labels: map[string]string{
				"infrastructure.cluster.x-k8s.io/data-name": data.Name,
				"infrastructure.cluster.x-k8s.io/pool-name": pool,
			},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: capm3.GroupVersion.String(), Kind: "Metal3Data", Name: data.Name, UID: data.UID,
				Controller: ptr.To(true),
			}},
		},
		Spec: ipamv1.IPClaimSpec{Pool: corev1.ObjectReference{Name: pool, Namespace: ns}},
	}
}

// Adopting a host CAPM3 provisioned with name-based preallocation reuses
// CAPM3's claim and its address.
func TestAdoptedHostReusesCAPM3sClaim(t *testing.T) {
	ns := newNamespace(t)
	racked := map[string]string{"rack": "r1"}
	host := fixtures.Host(ns, "node-0", "52:54:00:aa:bb:01", racked)
	delete(host.Annotations, preprovv1.PausedAnnotation)
	create(t, fixtures.Pool(ns, "provisioning", "192.0.2.10", "192.0.2.20", "192.0.2.1"), host)
	data := provisionedByCAPM3(t, ns, "node-0", "workers-abc", "pooled-0")
	create(t, capm3Claim(ns, "node-0-provisioning", "provisioning", data))
	var address string
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		claim := claimOf(c, ns, "node-0-provisioning")
		require.NotNil(c, claim.Status.Address)
		address = claim.Status.Address.Name
	}, waitTimeout, pollInterval)

	adopting := fixtures.PreprovisioningTemplate(ns, "rack-r1", racked, fixtures.PoolNetworkData("provisioning"))
	adopting.Spec.AdoptExistingHosts = true
	create(t, adopting)
	assert.Equal(t, "192.0.2.10", ipOf(waitForNetworkData(t, ns, "node-0")))

	claim := claimOf(t, ns, "node-0-provisioning")
	assert.Equal(t, address, claim.Status.Address.Name)
	hostUID := getHost(t, ns, "node-0").UID
	var owners []string
	for _, ref := range claim.OwnerReferences {
		owners = append(owners, ref.Kind)
		if ref.UID == hostUID {
			assert.Nil(t, ref.Controller, "the host must not take the claim over from CAPM3")
		}
	}
	assert.ElementsMatch(t, []string{"Metal3Data", "BareMetalHost"}, owners)
	for _, event := range hostEvents(t, ns, "node-0") {
		assert.Equal(t, corev1.EventTypeNormal, event.Type, "%s: %s", event.Reason, event.Note)
	}
}

// A host named like another host's Metal3Data ("<datatemplate>-<index>")
// meets that host's CAPM3 claims: it is warned, and never takes them.
func TestHostNamedLikeAnotherHostsMetal3DataIsWarned(t *testing.T) {
	ns := newNamespace(t)
	racked := map[string]string{"rack": "r1"}
	create(t, fixtures.Pool(ns, "provisioning", "192.0.2.10", "192.0.2.20", "192.0.2.1"),
		fixtures.Host(ns, "other", "52:54:00:aa:bb:02", nil))
	// CAPM3 provisioned "other" from the data template "pooled": its
	// Metal3Data is "pooled-1", and its claim "pooled-1-provisioning".
	data := provisionedByCAPM3(t, ns, "other", "workers-xyz", "pooled-1")
	create(t, capm3Claim(ns, "pooled-1-provisioning", "provisioning", data),
		fixtures.PreprovisioningTemplate(ns, "rack-r1", racked, fixtures.PoolNetworkData("provisioning")),
		fixtures.Host(ns, "pooled-1", "52:54:00:aa:bb:01", racked),
	)

	note := waitForEvent(t, ns, "pooled-1", baremetal.ReasonCAPM3NameCollision)
	assert.Contains(t, note, `Metal3Data "pooled-1" of another host`)
	assert.Contains(t, note, "rename this host")
	note = waitForEvent(t, ns, "pooled-1", baremetal.ReasonIPClaimFailed)
	assert.Contains(t, note, `IPClaim "pooled-1-provisioning" belongs to CAPM3's Metal3Data "pooled-1" of another host`)
	assertPausedForUs(t, ns, "pooled-1")
	claim := claimOf(t, ns, "pooled-1-provisioning")
	require.Len(t, claim.OwnerReferences, 1, "CAPM3's claim of another host was taken")
}
