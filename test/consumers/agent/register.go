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

package agent

import (
	"context"
	"fmt"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/inventory"
	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/nodes"
	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/ports"
	"sigs.k8s.io/yaml"

	"github.com/capm3-preprov/capm3-preprov/test/consumers/ironic"
)

// StateTimeout bounds the wait for a node to reach a provision state.
const StateTimeout = 5 * time.Minute

// RegisterAndInspect does what BMO HEAD's Ironic provisioner does for a new
// host with pre-provisioning network data, no PreprovisioningImage builder
// and the default inspection, up to the ramdisk booting, and returns the
// node in "inspect wait":
//
//   - Register/enrollNode: the node with the driver and interfaces of
//     redfishVirtualMediaAccessDetails (boot redfish-virtual-media,
//     firmware redfish, RAID redfish; BIOS, management, power and vendor
//     left to Ironic), inspect interface agent (defaultInspectInterface),
//     disable_power_off false, properties capabilities (boot mode) and
//     cpu_arch (getHostArchitecture: x86_64 here); createPortsForNode: a
//     PXE-enabled port for bootMACAddress; network_data from the Secret as
//     BMO decodes it; then manage.
//   - configureNode: driver_info deploy_kernel and deploy_ramdisk
//     (setDeployImage), automated_clean true.
//   - InspectHardware/startInspection: inspect.
//
// The boot mode is legacy (capabilities boot_mode:bios), which Ironic boots
// with isolinux: the Redfish stand-in reads a BIOS ISO's isolinux.cfg.
func (s *Ironic) RegisterAndInspect(ctx context.Context, host ironic.VirtualMediaHost) (*nodes.Node, error) {
	name := ironic.NodeName(host.Namespace, host.Name)
	driverInfo, err := ironic.RedfishDriverInfo(host)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	disablePowerOff := false
	node, err := nodes.Create(ctx, s.client, nodes.CreateOpts{
		Name: name, Driver: "redfish", DriverInfo: driverInfo,
		BootInterface: "redfish-virtual-media", FirmwareInterface: "redfish", InspectInterface: "agent", RAIDInterface: "redfish",
		DisablePowerOff: &disablePowerOff,
		Properties:      map[string]any{"capabilities": "boot_mode:bios", "cpu_arch": "x86_64"},
	}).Extract()
	if err != nil {
		return nil, fmt.Errorf("registering node %s: %w (ironic log: %s)", name, ironic.AsRefusal(err), s.LogPath)
	}
	pxeEnabled := true
	if _, err = ports.Create(ctx, s.client, ports.CreateOpts{NodeUUID: node.UUID, Address: host.BootMACAddress, PXEEnabled: &pxeEnabled}).Extract(); err != nil {
		return nil, fmt.Errorf("creating the port %s of node %s: %w", host.BootMACAddress, name, ironic.AsRefusal(err))
	}
	if len(host.NetworkData) > 0 { // BMO sends none for a host without pre-provisioning data
		var networkData map[string]any
		if err = yaml.Unmarshal(host.NetworkData, &networkData); err != nil {
			return nil, fmt.Errorf("decoding the network data of %s as BMO does: %w", name, err)
		}
		if node, err = s.update(ctx, node, nodes.UpdateOperation{Op: nodes.AddOp, Path: "/network_data", Value: networkData}); err != nil {
			return nil, err
		}
	}
	if node, err = s.provision(ctx, node, nodes.TargetManage, nodes.Manageable); err != nil {
		return nil, err
	}
	node, err = s.update(ctx, node,
		nodes.UpdateOperation{Op: nodes.AddOp, Path: "/driver_info/deploy_kernel", Value: s.httpURL + "/" + deployKernel},
		nodes.UpdateOperation{Op: nodes.AddOp, Path: "/driver_info/deploy_ramdisk", Value: s.httpURL + "/" + deployRamdisk},
		nodes.UpdateOperation{Op: nodes.ReplaceOp, Path: "/automated_clean", Value: true})
	if err != nil {
		return nil, err
	}
	return s.provision(ctx, node, nodes.TargetInspect, nodes.InspectWait)
}

func (s *Ironic) update(ctx context.Context, node *nodes.Node, operations ...nodes.UpdateOperation) (*nodes.Node, error) {
	opts := nodes.UpdateOpts{}
	for _, operation := range operations {
		opts = append(opts, operation)
	}
	updated, err := nodes.Update(ctx, s.client, node.UUID, opts).Extract()
	if err != nil {
		return nil, fmt.Errorf("updating node %s: %w (ironic log: %s)", node.Name, ironic.AsRefusal(err), s.LogPath)
	}
	return updated, nil
}

// provision asks for a provision state change, as BMO's
// changeNodeProvisionState does, and waits until the node is in want.
func (s *Ironic) provision(ctx context.Context, node *nodes.Node, target nodes.TargetProvisionState, want nodes.ProvisionState) (*nodes.Node, error) {
	return ironic.ChangeProvisionState(ctx, s.client, node, target, want, StateTimeout, s.LogPath)
}

// WaitForProvisionState polls the node until it is in want, for at most
// timeout, and fails at once when Ironic records an error on it.
func (s *Ironic) WaitForProvisionState(ctx context.Context, uuid string, want nodes.ProvisionState, timeout time.Duration) (*nodes.Node, error) {
	return ironic.WaitForProvisionState(ctx, s.client, uuid, want, timeout, s.LogPath)
}

// Node reads a node.
func (s *Ironic) Node(ctx context.Context, uuid string) (*nodes.Node, error) {
	node, err := nodes.Get(ctx, s.client, uuid).Extract()
	if err != nil {
		return nil, fmt.Errorf("reading node %s: %w", uuid, ironic.AsRefusal(err))
	}
	return node, nil
}

// Inventory is what the agent posted to /v1/continue_inspection, as
// Ironic keeps it (GET /v1/nodes/<uuid>/inventory, BMO's GetInventory).
func (s *Ironic) Inventory(ctx context.Context, uuid string) (*inventory.InventoryType, error) {
	data, err := nodes.GetInventory(ctx, s.client, uuid).Extract()
	if err != nil {
		return nil, fmt.Errorf("reading the inventory of node %s: %w", uuid, ironic.AsRefusal(err))
	}
	return &data.Inventory, nil
}
