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

package main

import (
	"testing"

	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/capm3-preprov/capm3-preprov/test/standins/bmomodel"
)

func sequence(seed uint64, steps int) []string {
	plan := newPlanner(seed)
	ops := make([]string, steps)
	for i := range ops {
		ops[i] = plan.next().String()
	}
	return ops
}

func TestSequenceDependsOnTheSeedOnly(t *testing.T) {
	first, again := sequence(7, 1000), sequence(7, 1000)
	assert.Equal(t, first, again)
	assert.NotEqual(t, sequence(7, 1000), sequence(8, 1000))
	for _, o := range sequence(7, 1000) {
		assert.NotEmpty(t, o)
	}
}

func TestAddressesOnTwoMachines(t *testing.T) {
	use := func(host, system string, addresses ...string) bmomodel.Use {
		return bmomodel.Use{Host: types.NamespacedName{Namespace: namespace, Name: host}, System: system, Addresses: addresses}
	}
	pool := newPool(0, 3)
	snap := &snapshot{pools: []ipamv1.IPPool{*pool}, uses: []bmomodel.Use{use("h00", "os", "10.10.0.10"), use("h01", "ramdisk", "10.10.0.10")}}
	problems := addressesOnTwoMachines(snap)
	assert.Contains(t, problems, "address on two machines: 10.10.0.10 is used by h00's os and h01's ramdisk")
	assert.Contains(t, problems, "address free while in use: 10.10.0.10 is used by h00's os and h01's ramdisk and IPAM holds it for no claim (the next claim gets it)")

	snap.uses = []bmomodel.Use{use("h00", "os", "10.10.0.11")}
	snap.addresses = []ipamv1.IPAddress{address("h01-pool-0", "10.10.0.11")}
	assert.Equal(t, []string{"address on two machines: 10.10.0.11 is used by h00's os and allocated by IPAM to IPClaim h01-pool-0 of host h01"},
		addressesOnTwoMachines(snap))

	snap.addresses = []ipamv1.IPAddress{address("h00-pool-0", "10.10.0.11")}
	assert.Empty(t, addressesOnTwoMachines(snap))
}

func address(claim, ip string) ipamv1.IPAddress {
	return ipamv1.IPAddress{Spec: ipamv1.IPAddressSpec{Address: ipamv1.IPAddressStr(ip),
		Claim: corev1.ObjectReference{Name: claim}, Pool: corev1.ObjectReference{Name: poolName(0)}}}
}
