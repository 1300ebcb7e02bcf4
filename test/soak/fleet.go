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
	"time"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	capm3 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/test/framework/fixtures"
)

// The soak's labels: the template group a host is in, the host's own name
// (HostClaims select a host by it), and the host the objects the soak makes
// as CAPM3 are made for.
const (
	groupLabel    = "soak.metal3.io/group"
	hostLabel     = "soak.metal3.io/host"
	consumerLabel = "soak.metal3.io/consumer-of"
	// objectTimeout bounds a wait on an object the soak changed.
	objectTimeout = 30 * time.Second
	poll          = 100 * time.Millisecond
)

// poolRange is the first and last address of a pool of size addresses:
// each pool has its own /24.
func poolRange(pool, size int) (string, string) {
	prefix := fmt.Sprintf("10.%d.0.", 10+pool)
	return prefix + "10", prefix + strconv.Itoa(10+size-1)
}

func newPool(pool, size int) *ipamv1.IPPool {
	start, end := poolRange(pool, size)
	return fixtures.Pool(namespace, poolName(pool), start, end, fmt.Sprintf("10.%d.0.1", 10+pool))
}

func templateName(group, version int) string {
	return fmt.Sprintf("%s-v%d", groupName(group), version)
}

func networkData(pool, mtu int) *capm3.NetworkData {
	data := fixtures.PoolNetworkData(poolName(pool))
	data.Links.Ethernets[0].MTU = int32(mtu)
	return data
}

func newTemplate(group int, t templateGroup) *preprovv1.Metal3PreprovisioningTemplate {
	template := fixtures.PreprovisioningTemplate(namespace, templateName(group, t.version),
		map[string]string{groupLabel: groupName(group)}, networkData(t.pool, t.mtu))
	template.Spec.ProvisionedHostPolicy = preprovv1.ProvisionedHostReportDrift
	if t.update {
		template.Spec.ProvisionedHostPolicy = preprovv1.ProvisionedHostUpdate
	}
	return template
}

// dataTemplateName is the Metal3DataTemplate the soak's CAPM3 renders a
// pool's address from.
func dataTemplateName(pool int) string { return "dt-" + poolName(pool) }

// createFleet creates the pools, a template per group and a
// Metal3DataTemplate per pool, as the plan's book starts them.
func (s *soak) createFleet(ctx context.Context, start book) error {
	var objects []client.Object
	for pool, size := range start.poolSizes {
		objects = append(objects, newPool(pool, size),
			fixtures.DataTemplate(namespace, dataTemplateName(pool), fixtures.PoolNetworkData(poolName(pool))))
	}
	for group, t := range start.templates {
		objects = append(objects, newTemplate(group, t))
	}
	for _, obj := range objects {
		if err := s.c.Create(ctx, obj); err != nil {
			return fmt.Errorf("creating %T %s: %w", obj, obj.GetName(), err)
		}
	}
	return nil
}

func newHost(name string, group, macIndex int) *bmov1alpha1.BareMetalHost {
	labels := map[string]string{hostLabel: name}
	if group >= 0 {
		labels[groupLabel] = groupName(group)
	}
	host := fixtures.Host(namespace, name, fixtures.MAC(namespace, 1, macIndex), labels)
	host.Spec.BMC.Address = "redfish-virtualmedia+https://192.0.2.1:8000/redfish/v1/Systems/" + strconv.Itoa(macIndex)
	return host
}

// createHost registers a host once the name is free (a host deleted just
// before may still be going).
func (s *soak) createHost(ctx context.Context, name string, group, macIndex int) error {
	if err := s.waitGone(ctx, &bmov1alpha1.BareMetalHost{}, name); err != nil {
		return err
	}
	return s.c.Create(ctx, newHost(name, group, macIndex))
}

// deleteHost deletes a host as a user does, after what consumes it: the
// Machine CAPM3 provisioned it for, or the tenant's HostClaim.
func (s *soak) deleteHost(ctx context.Context, name string) error {
	if err := s.deleteConsumers(ctx, name); err != nil {
		return err
	}
	host := &bmov1alpha1.BareMetalHost{}
	host.Namespace, host.Name = namespace, name
	return client.IgnoreNotFound(s.c.Delete(ctx, host))
}

// getHost reads a host; nil when it does not exist.
func (s *soak) getHost(ctx context.Context, name string) (*bmov1alpha1.BareMetalHost, error) {
	host := &bmov1alpha1.BareMetalHost{}
	err := s.c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, host)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return host, err
}

// patchHost changes a host with an optimistically locked merge patch,
// read again on a conflict.
func (s *soak) patchHost(ctx context.Context, name string, change func(*bmov1alpha1.BareMetalHost)) error {
	return patch(ctx, s, &bmov1alpha1.BareMetalHost{}, name, change)
}

func patch[T client.Object](ctx context.Context, s *soak, obj T, name string, change func(T)) error {
	return wait.PollUntilContextTimeout(ctx, poll, objectTimeout, true, func(ctx context.Context) (bool, error) {
		if err := s.c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, obj); err != nil {
			return false, err
		}
		original, _ := obj.DeepCopyObject().(client.Object) // a copy of obj is of its type
		change(obj)
		err := s.c.Patch(ctx, obj, client.MergeFromWithOptions(original, client.MergeFromWithOptimisticLock{}))
		if apierrors.IsConflict(err) {
			return false, nil
		}
		return err == nil, err
	})
}

// waitGone waits until an object of the soak's namespace is gone.
func (s *soak) waitGone(ctx context.Context, obj client.Object, name string) error {
	err := wait.PollUntilContextTimeout(ctx, poll, objectTimeout, true, func(ctx context.Context) (bool, error) {
		err := s.c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, obj)
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
	if err != nil {
		return fmt.Errorf("waiting for %T %s to go: %w", obj, name, err)
	}
	return nil
}

// waitState waits until BMO's model has taken a host to state.
func (s *soak) waitState(ctx context.Context, name string, state bmov1alpha1.ProvisioningState) error {
	err := wait.PollUntilContextTimeout(ctx, poll, objectTimeout, true, func(ctx context.Context) (bool, error) {
		host, err := s.getHost(ctx, name)
		if err != nil || host == nil {
			return false, err
		}
		return host.Status.Provisioning.State == state, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for host %s to be %s: %w", name, state, err)
	}
	return nil
}

// image is what the soak provisions.
func image() *bmov1alpha1.Image {
	return &bmov1alpha1.Image{URL: "http://images.example.com/node.qcow2", Checksum: "http://images.example.com/node.qcow2.sha256sum",
		ChecksumType: bmov1alpha1.SHA256, DiskFormat: ptr.To("qcow2")}
}
