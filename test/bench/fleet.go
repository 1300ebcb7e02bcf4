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
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	capm3 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capm3-preprov/capm3-preprov/test/framework/fixtures"
)

// The fleet: hosts spread over racks, one opted-in Metal3MachineTemplate and
// Metal3DataTemplate (or one Metal3PreprovisioningTemplate) per rack, and the two pools of fixtures every host takes
// an address from. A sharded fleet is one such fleet per shard in the same
// namespace: the shard's hosts, its own two pools and its own templates.
const (
	racks = 4
	// creators is how many hosts the harness registers at once.
	creators = 8
)

var pools = []string{fixtures.ProvisioningPool, fixtures.StoragePool}

// shardNames are the shards of a sharded fleet, the values of its objects'
// watch-filter label: the first half of the hosts is the first shard's.
var shardNames = []string{"shard-a", "shard-b"}

// fleet is the objects of one namespace.
type fleet struct {
	namespace string
	hosts     int
	hardware  bool
	// preprovisioning selects the racks with Metal3PreprovisioningTemplates,
	// whose status counts the hosts, instead of Metal3MachineTemplates.
	preprovisioning bool
	// sharded splits the fleet between shardNames: every host, pool and
	// template carries the cluster.x-k8s.io/watch-filter label of its shard.
	sharded bool
	// clusterAPI takes the addresses from InClusterIPPools of the same
	// names and ranges instead of Metal3 IPPools.
	clusterAPI bool
}

func hostName(i int) string { return fmt.Sprintf("host-%05d", i) }

// hostIndex is the index of the host an object name starts with (a host,
// its claims, its Secret, its events), if it names one.
func hostIndex(name string) (int, bool) {
	digits, ok := strings.CutPrefix(name, "host-")
	if !ok || len(digits) < 5 {
		return 0, false
	}
	i, err := strconv.Atoi(digits[:5])
	return i, err == nil
}

// shards are the fleet's shards: "" alone when it is not sharded.
func (f fleet) shards() []string {
	if !f.sharded {
		return []string{""}
	}
	return shardNames
}

// shardOf is host i's shard.
func (f fleet) shardOf(i int) string {
	if !f.sharded {
		return ""
	}
	return shardNames[i*len(shardNames)/f.hosts]
}

// shardHosts are the indexes of the shard's hosts.
func (f fleet) shardHosts(shard string) []int {
	var indexes []int
	for i := range f.hosts {
		if f.shardOf(i) == shard {
			indexes = append(indexes, i)
		}
	}
	return indexes
}

// shardOfObject is the shard an object of the fleet belongs to, from its
// name: a host, and what is named after one (its claims, Secret and events),
// by the host's index; pools, templates, IPAddresses and Leases by the shard
// in their name. It is "" for an object of no shard.
func (f fleet) shardOfObject(resource, name string) string {
	if resource == "events" {
		// An event is named after its object: <object>.<timestamp>.
		name, _, _ = strings.Cut(name, ".")
	}
	if i, ok := hostIndex(name); ok && i < f.hosts {
		return f.shardOf(i)
	}
	for _, shard := range shardNames {
		if strings.Contains(name, shard) {
			return shard
		}
	}
	return ""
}

// poolsOf are a shard's two pools, named after it.
func poolsOf(shard string) []string {
	if shard == "" {
		return pools
	}
	return []string{fixtures.ProvisioningPool + "-" + shard, fixtures.StoragePool + "-" + shard}
}

// templateName is the name of a shard's templates of rack r.
func templateName(shard string, r int) string {
	name := "rack-" + rackOf(r)
	if shard != "" {
		name = shard + "-" + name
	}
	return name
}

// labelShard puts the object into a shard: the watch-filter label.
func labelShard(obj client.Object, shard string) {
	if shard == "" {
		return
	}
	objLabels := obj.GetLabels()
	if objLabels == nil {
		objLabels = map[string]string{}
	}
	objLabels[clusterv1.WatchLabel] = shard
	obj.SetLabels(objLabels)
}

func rackOf(i int) string { return fmt.Sprintf("r%d", i%racks) }

// bootMAC is host i's boot MAC, unique within a namespace.
func (f fleet) bootMAC(i int) string { return fixtures.MAC(f.namespace, 1, i) }

// createTemplates creates the namespace and, for each shard, two /16 pools
// and per rack a Metal3DataTemplate and an opted-in Metal3MachineTemplate, or
// a Metal3PreprovisioningTemplate with the same selector and network data.
// A shard's templates select only its hosts.
func (f fleet) createTemplates(ctx context.Context, c client.Client) error {
	objects := []client.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: f.namespace}}}
	for s, shard := range f.shards() {
		shardPools := poolsOf(shard)
		// Each shard's pools have address ranges of their own: 10.10 and 10.20, 10.11 and 10.21.
		shardObjects := []client.Object{
			f.pool(shardPools[0], fmt.Sprintf("10.%d", 10+s)),
			f.pool(shardPools[1], fmt.Sprintf("10.%d", 20+s)),
		}
		for r := range racks {
			name := templateName(shard, r)
			selector := map[string]string{"rack": rackOf(r), "role": "worker"}
			if shard != "" {
				selector[clusterv1.WatchLabel] = shard
			}
			bySite := []capm3.HostSelectorRequirement{{Key: "site", Operator: "in", Values: []string{"fra1", "fra2"}}}
			if f.preprovisioning {
				template := fixtures.PreprovisioningTemplate(f.namespace, name, selector, f.networkData(shard, r))
				template.Spec.HostSelector.MatchExpressions = bySite
				shardObjects = append(shardObjects, template)
				continue
			}
			dataTemplate := fixtures.DataTemplate(f.namespace, name, f.networkData(shard, r))
			machineTemplate := fixtures.MachineTemplate(f.namespace, name, dataTemplate.Name, selector)
			machineTemplate.Spec.Template.Spec.HostSelector.MatchExpressions = bySite
			shardObjects = append(shardObjects, dataTemplate, machineTemplate)
		}
		for _, obj := range shardObjects {
			labelShard(obj, shard)
		}
		objects = append(objects, shardObjects...)
	}
	for _, obj := range objects {
		if err := c.Create(ctx, obj); err != nil {
			return fmt.Errorf("creating %T %s: %w", obj, obj.GetName(), err)
		}
	}
	return nil
}

// pool is a /16 with room for every host: "10.10" gives 10.10.0.10-10.10.255.250.
func (f fleet) pool(name, prefix16 string) client.Object {
	if f.clusterAPI {
		return fixtures.InClusterIPPool(f.namespace, name, prefix16+".0.10-"+prefix16+".255.250", 16, prefix16+".0.1")
	}
	p := fixtures.Pool(f.namespace, name, prefix16+".0.10", prefix16+".255.250", prefix16+".0.1")
	p.Spec.Prefix = 16
	return p
}

// networkData is the rack's network in a shard, from the fleet's kind of pools.
func (f fleet) networkData(shard string, rack int) *capm3.NetworkData {
	nd := networkData(shard, rack)
	if f.clusterAPI {
		toClusterAPIPools(nd)
	}
	return nd
}

// toClusterAPIPools takes the network data's addresses and gateways from
// the InClusterIPPools of the same names, and its DNS server from the
// template: a Cluster API pool has none.
func toClusterAPIPools(nd *capm3.NetworkData) {
	for i := range nd.Networks.IPv4 {
		network := &nd.Networks.IPv4[i]
		network.FromPoolRef, network.IPAddressFromIPPool = fixtures.ClusterAPIPoolRef(network.IPAddressFromIPPool), ""
		for j := range network.Routes {
			route := &network.Routes[j]
			if route.Gateway.FromIPPool != "" {
				route.Gateway.FromPoolRef, route.Gateway.FromIPPool = fixtures.ClusterAPIPoolRef(route.Gateway.FromIPPool), ""
			}
			if route.Services != nil && route.Services.DNSFromIPPool != "" {
				route.Services.DNSFromIPPool, route.Services.DNS = "", []ipamv1.IPAddressv4Str{"10.10.0.2"}
			}
		}
	}
}

// bootMACAnnotation carries the boot NIC's MAC on each host, for the VLAN
// on that NIC: before inspection only one link may take spec.bootMACAddress.
const bootMACAnnotation = "network.example.com/boot-mac"

// networkData is the rack's network in a shard: the boot NIC (eno1 once
// inspected) with an address from the shard's provisioning pool, a default
// route and DNS from it, and a storage VLAN on the same NIC with an address
// from its storage pool.
func networkData(shard string, rack int) *capm3.NetworkData {
	shardPools := poolsOf(shard)
	nd := fixtures.PoolNetworkData(shardPools[0])
	nd.Links.Ethernets[0].MTU = 9000
	nd.Links.Ethernets[0].MACAddress = &capm3.NetworkLinkEthernetMac{FromHostInterface: "eno1"}
	nd.Links.Vlans = []capm3.NetworkDataLinkVlan{{
		Id: "storage", VlanID: ptr.To(int32(100 + rack)), VlanLink: nd.Links.Ethernets[0].Id, MTU: 9000,
		MACAddress: &capm3.NetworkLinkEthernetMac{FromAnnotation: capm3.NetworkLinkEthernetMacFromAnnotation{
			Object: "baremetalhost", Annotation: bootMACAnnotation,
		}},
	}}
	nd.Networks.IPv4 = append(nd.Networks.IPv4, capm3.NetworkDataIPv4{
		ID: "storage", Link: "storage", IPAddressFromIPPool: shardPools[1],
	})
	return nd
}

// networkDataOf is the network data of the template that selects host i.
func (f fleet) networkDataOf(i int) *capm3.NetworkData { return f.networkData(f.shardOf(i), i%racks) }

// templateOf names the Metal3MachineTemplate that selects host i.
func (f fleet) templateOf(i int) string { return templateName(f.shardOf(i), i%racks) }

// host is host i as a user registers it: paused for preprovisioning, with
// labels, a BMC and a boot MAC address.
func (f fleet) host(i int) *bmov1alpha1.BareMetalHost {
	name := hostName(i)
	host := fixtures.Host(f.namespace, name, f.bootMAC(i), map[string]string{
		"rack": rackOf(i), "role": "worker", "site": "fra1",
		"hardware.example.com/profile": "gen11",
	})
	host.Annotations[bootMACAnnotation] = f.bootMAC(i)
	host.Spec.BootMode = bmov1alpha1.UEFI
	labelShard(host, f.shardOf(i))
	return host
}

// createHosts registers the hosts, creators at a time, and returns each
// host as the API server returned it (uid and resourceVersion) with the time
// its creation started. In the hardware scenario it also writes status.hardware.
func (f fleet) createHosts(ctx context.Context, c client.Client) ([]*bmov1alpha1.BareMetalHost, []time.Time, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	hosts := make([]*bmov1alpha1.BareMetalHost, f.hosts)
	started := make([]time.Time, f.hosts)
	indexes := make(chan int)
	var wg sync.WaitGroup
	for range creators {
		wg.Go(func() {
			for i := range indexes {
				started[i] = time.Now()
				host, err := f.createHost(ctx, c, i)
				if err != nil {
					cancel(err)
					return
				}
				hosts[i] = host
			}
		})
	}
	for i := range f.hosts {
		select {
		case indexes <- i:
		case <-ctx.Done():
		}
	}
	close(indexes)
	wg.Wait()
	return hosts, started, context.Cause(ctx)
}

func (f fleet) createHost(ctx context.Context, c client.Client, i int) (*bmov1alpha1.BareMetalHost, error) {
	host := f.host(i)
	if err := c.Create(ctx, host); err != nil {
		return nil, fmt.Errorf("creating BareMetalHost %s: %w", host.Name, err)
	}
	if !f.hardware {
		return host, nil
	}
	host.Status = inspectedStatus(i, f.bootMAC(i))
	if err := c.Status().Update(ctx, host); err != nil {
		return nil, fmt.Errorf("writing the status of BareMetalHost %s: %w", host.Name, err)
	}
	return host, nil
}
