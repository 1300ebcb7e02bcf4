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

package ironic

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/inventory"
	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/nodes"
	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/ports"
)

// StateTimeout bounds the wait for a node to reach a provision state.
const StateTimeout = 5 * time.Minute

// VirtualMediaHost is what BMO hands Ironic of a BareMetalHost whose BMC
// boots from virtual media.
type VirtualMediaHost struct {
	Namespace, Name string
	// BMCAddress is spec.bmc.address, redfish-virtualmedia+http://<bmc>/redfish/v1/Systems/<id>.
	BMCAddress         string
	Username, Password string
	// BootMACAddress is spec.bootMACAddress; BMO makes it the node's port.
	BootMACAddress string
	// NetworkData is the value of the pre-provisioning network data Secret;
	// empty for a host without one.
	NetworkData []byte
}

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
//     BMO decodes it (SetNetworkData); then manage.
//   - configureNode: driver_info deploy_kernel and deploy_ramdisk
//     (setDeployImage), automated_clean true.
//   - InspectHardware/startInspection: inspect.
//
// Ironic then builds the ISO and inserts it through the BMC. The boot mode
// is legacy (capabilities boot_mode:bios), which Ironic boots with
// isolinux: the Redfish stand-in reads a BIOS ISO's isolinux.cfg.
func (s *Server) RegisterAndInspect(ctx context.Context, host VirtualMediaHost) (*nodes.Node, error) {
	name := NodeName(host.Namespace, host.Name)
	driverInfo, err := redfishDriverInfo(host)
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
		return nil, fmt.Errorf("registering node %s: %w (ironic log: %s)", name, asRefusal(err), s.LogPath)
	}
	pxeEnabled := true
	if _, err = ports.Create(ctx, s.client, ports.CreateOpts{NodeUUID: node.UUID, Address: host.BootMACAddress, PXEEnabled: &pxeEnabled}).Extract(); err != nil {
		return nil, fmt.Errorf("creating the port %s of node %s: %w", host.BootMACAddress, name, asRefusal(err))
	}
	if len(host.NetworkData) > 0 { // BMO sends none for a host without pre-provisioning data
		if node, err = s.SetNetworkData(ctx, node, host.NetworkData); err != nil {
			return nil, fmt.Errorf("%s: %w (ironic log: %s)", name, err, s.LogPath)
		}
	}
	if node, err = s.provision(ctx, node, nodes.TargetManage, nodes.Manageable); err != nil {
		return nil, err
	}
	node, err = nodes.Update(ctx, s.client, node.UUID, nodes.UpdateOpts{
		nodes.UpdateOperation{Op: nodes.AddOp, Path: "/driver_info/deploy_kernel", Value: s.httpURL + "/" + deployKernel},
		nodes.UpdateOperation{Op: nodes.AddOp, Path: "/driver_info/deploy_ramdisk", Value: s.httpURL + "/" + deployRamdisk},
		nodes.UpdateOperation{Op: nodes.ReplaceOp, Path: "/automated_clean", Value: true},
	}).Extract()
	if err != nil {
		return nil, fmt.Errorf("configuring node %s: %w (ironic log: %s)", name, asRefusal(err), s.LogPath)
	}
	return s.provision(ctx, node, nodes.TargetInspect, nodes.InspectWait)
}

// redfishDriverInfo is redfishAccessDetails.DriverInfo of BMO's bmc
// package for a redfish-virtualmedia address: the Redfish URL with the
// scheme after "+" (https without one), the path as the system id.
func redfishDriverInfo(host VirtualMediaHost) (map[string]any, error) {
	address, err := url.Parse(host.BMCAddress)
	if err != nil {
		return nil, fmt.Errorf("BMC address %q: %w", host.BMCAddress, err)
	}
	bmcType, scheme, found := strings.Cut(address.Scheme, "+")
	if bmcType != "redfish-virtualmedia" {
		return nil, fmt.Errorf("BMC address %q: only redfish-virtualmedia:// boots from virtual media here", host.BMCAddress)
	}
	if !found {
		scheme = "https"
	}
	info := map[string]any{
		"redfish_username": host.Username,
		"redfish_password": host.Password,
		"redfish_address":  scheme + "://" + address.Host,
	}
	if path := strings.Trim(address.Path, "/"); path != "" && path != "redfish/v1" {
		info["redfish_system_id"] = address.Path
	}
	return info, nil
}

// provision asks for a provision state change, as BMO's
// changeNodeProvisionState does, and waits until the node is in want.
func (s *Server) provision(ctx context.Context, node *nodes.Node, target nodes.TargetProvisionState, want nodes.ProvisionState) (*nodes.Node, error) {
	if err := nodes.ChangeProvisionState(ctx, s.client, node.UUID, nodes.ProvisionStateOpts{Target: target}).ExtractErr(); err != nil {
		return nil, fmt.Errorf("%s of node %s: %w (ironic log: %s)", target, node.Name, asRefusal(err), s.LogPath)
	}
	return s.WaitForProvisionState(ctx, node.UUID, want, StateTimeout)
}

// WaitForProvisionState polls the node until it is in want, for at most
// timeout, and fails at once when Ironic records an error on it. (A node
// in "inspect wait" keeps its target "manageable".)
func (s *Server) WaitForProvisionState(ctx context.Context, uuid string, want nodes.ProvisionState, timeout time.Duration) (*nodes.Node, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ticker := time.NewTicker(200 * time.Millisecond)
	defer ticker.Stop()
	for {
		node, err := nodes.Get(ctx, s.client, uuid).Extract()
		switch {
		case err != nil:
			return nil, fmt.Errorf("reading node %s: %w", uuid, asRefusal(err))
		case node.ProvisionState == string(want):
			return node, nil
		case node.LastError != "":
			return nil, fmt.Errorf("node %s is %q, not %q: %s (ironic log: %s)", node.Name, node.ProvisionState, want, node.LastError, s.LogPath)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("node %s stayed %q (target %q), not %q within %s (ironic log: %s)",
				node.Name, node.ProvisionState, node.TargetProvisionState, want, timeout, s.LogPath)
		case <-ticker.C:
		}
	}
}

// ReadNode reads a node.
func (s *Server) ReadNode(ctx context.Context, uuid string) (*nodes.Node, error) {
	node, err := nodes.Get(ctx, s.client, uuid).Extract()
	if err != nil {
		return nil, fmt.Errorf("reading node %s: %w", uuid, asRefusal(err))
	}
	return node, nil
}

// Inventory is what the agent posted to /v1/continue_inspection, as
// Ironic keeps it (GET /v1/nodes/<uuid>/inventory, BMO's GetInventory).
func (s *Server) Inventory(ctx context.Context, uuid string) (*inventory.InventoryType, error) {
	data, err := nodes.GetInventory(ctx, s.client, uuid).Extract()
	if err != nil {
		return nil, fmt.Errorf("reading the inventory of node %s: %w", uuid, asRefusal(err))
	}
	return &data.Inventory, nil
}
