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
	"sync"
	"time"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	capm3 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capm3-preprov/capm3-preprov/test/framework/fixtures"
)

// The fleet: hosts spread over racks, one opted-in Metal3MachineTemplate and
// Metal3DataTemplate (or one Metal3PreprovisioningTemplate) per rack, and the two pools of fixtures every host takes
// an address from.
const (
	racks = 4
	// creators is how many hosts the harness registers at once.
	creators = 8
)

var pools = []string{fixtures.ProvisioningPool, fixtures.StoragePool}

// fleet is the objects of one namespace.
type fleet struct {
	namespace string
	hosts     int
	hardware  bool
	// preprovisioning selects the racks with Metal3PreprovisioningTemplates,
	// whose status counts the hosts, instead of Metal3MachineTemplates.
	preprovisioning bool
}

func hostName(i int) string { return fmt.Sprintf("host-%05d", i) }

func rackOf(i int) string { return fmt.Sprintf("r%d", i%racks) }

// bootMAC is host i's boot MAC, unique within a namespace.
func (f fleet) bootMAC(i int) string { return fixtures.MAC(f.namespace, 1, i) }

// createTemplates creates the namespace, the two /16 pools, and per rack a
// Metal3DataTemplate and an opted-in Metal3MachineTemplate, or a
// Metal3PreprovisioningTemplate with the same selector and network data.
func (f fleet) createTemplates(ctx context.Context, c client.Client) error {
	objects := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: f.namespace}},
		pool(f.namespace, fixtures.ProvisioningPool, "10.10"),
		pool(f.namespace, fixtures.StoragePool, "10.20"),
	}
	for r := range racks {
		rack := rackOf(r)
		selector := map[string]string{"rack": rack, "role": "worker"}
		bySite := []capm3.HostSelectorRequirement{{Key: "site", Operator: "in", Values: []string{"fra1", "fra2"}}}
		if f.preprovisioning {
			template := fixtures.PreprovisioningTemplate(f.namespace, "rack-"+rack, selector, networkData(r))
			template.Spec.HostSelector.MatchExpressions = bySite
			objects = append(objects, template)
			continue
		}
		dataTemplate := fixtures.DataTemplate(f.namespace, "rack-"+rack, networkData(r))
		machineTemplate := fixtures.MachineTemplate(f.namespace, "rack-"+rack, dataTemplate.Name, selector)
		machineTemplate.Spec.Template.Spec.HostSelector.MatchExpressions = bySite
		objects = append(objects, dataTemplate, machineTemplate)
	}
	for _, obj := range objects {
		if err := c.Create(ctx, obj); err != nil {
			return fmt.Errorf("creating %T %s: %w", obj, obj.GetName(), err)
		}
	}
	return nil
}

// pool is a /16 with room for every host: "10.10" gives 10.10.0.10-10.10.255.250.
func pool(namespace, name, prefix16 string) *ipamv1.IPPool {
	p := fixtures.Pool(namespace, name, prefix16+".0.10", prefix16+".255.250", prefix16+".0.1")
	p.Spec.Prefix = 16
	return p
}

// bootMACAnnotation carries the boot NIC's MAC on each host, for the VLAN
// on that NIC: before inspection only one link may take spec.bootMACAddress.
const bootMACAnnotation = "network.example.com/boot-mac"

// networkData is the rack's network: the boot NIC (eno1 once inspected)
// with an address from the provisioning pool, a default route and DNS from
// it, and a storage VLAN on the same NIC with an address from the storage pool.
func networkData(rack int) *capm3.NetworkData {
	nd := fixtures.PoolNetworkData(fixtures.ProvisioningPool)
	nd.Links.Ethernets[0].MTU = 9000
	nd.Links.Ethernets[0].MACAddress = &capm3.NetworkLinkEthernetMac{FromHostInterface: "eno1"}
	nd.Links.Vlans = []capm3.NetworkDataLinkVlan{{
		Id: "storage", VlanID: ptr.To(int32(100 + rack)), VlanLink: nd.Links.Ethernets[0].Id, MTU: 9000,
		MACAddress: &capm3.NetworkLinkEthernetMac{FromAnnotation: capm3.NetworkLinkEthernetMacFromAnnotation{
			Object: "baremetalhost", Annotation: bootMACAnnotation,
		}},
	}}
	nd.Networks.IPv4 = append(nd.Networks.IPv4, capm3.NetworkDataIPv4{
		ID: "storage", Link: "storage", IPAddressFromIPPool: fixtures.StoragePool,
	})
	return nd
}

// networkDataOf is the network data of the template that selects host i.
func networkDataOf(i int) *capm3.NetworkData { return networkData(i % racks) }

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
