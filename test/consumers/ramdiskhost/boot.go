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

package ramdiskhost

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/capm3-preprov/capm3-preprov/test/consumers/cloudinit"
)

// ErrNoNetworkData is Boot's answer for an ISO without network data: the
// ramdisk has nothing to configure its NIC from (glean would ask DHCP,
// and no DHCP server answers).
var ErrNoNetworkData = errors.New("the ISO's config drive has no openstack/latest/network_data.json: the ramdisk has no static configuration, would ask DHCP, and no DHCP server exists")

// Boot configures the host's network from the network data its ISO
// carries, as its ramdisk would: cloud-init converts the document to
// netplan with the host's NIC given as --mac enp1s0,<MAC>, and each
// ethernet of the netplan whose match.macaddress is the NIC's MAC is
// applied with ip commands in the host's namespace:
//
//	ip link set dev enp1s0 name <set-name>        (when set-name differs)
//	ip link set dev <nic> mtu <mtu>               (when set)
//	ip link set dev <nic> up
//	ip addr add <address/prefix> dev <nic>        (IPv6 with nodad)
//	ip route add <to|default> via <via> dev <nic> (-4 or -6 by the gateway)
//
// It returns the commands it ran. A document cloud-init refuses, or whose
// ethernets match no NIC of the host, leaves the host unconfigured with an
// error saying so. Bonds and VLANs are refused: this machine's kernel has
// no bonding or 8021q module (their conversion is checked by test/consumers/cloudinit).
func (h *Host) Boot(ctx context.Context, networkData []byte, dir string) ([]string, error) {
	if len(networkData) == 0 {
		return nil, ErrNoNetworkData
	}
	plan, err := h.convert(ctx, networkData, dir)
	if err != nil {
		return nil, err
	}
	if len(plan.Network.Bonds) > 0 || len(plan.Network.VLANs) > 0 {
		return nil, fmt.Errorf("host %s: its network data has bonds or VLANs, which this machine's kernel cannot make (no bonding or 8021q module)", h.Name)
	}
	var commands []string
	for _, name := range slices.Sorted(maps.Keys(plan.Network.Ethernets)) {
		device := plan.Network.Ethernets[name]
		if device.Match == nil || !strings.EqualFold(device.Match.MACAddress, h.MAC) {
			continue
		}
		applied, err := h.apply(ctx, device)
		commands = append(commands, applied...)
		if err != nil {
			return commands, err
		}
	}
	if len(commands) == 0 {
		return nil, fmt.Errorf("host %s: no ethernet of cloud-init's configuration matches its NIC %s (%s); the NIC stays unconfigured", h.Name, NIC, h.MAC)
	}
	return commands, nil
}

// convert runs cloud-init's net-convert on the document with the host's
// NIC, writing into dir, and parses the netplan it writes.
func (h *Host) convert(ctx context.Context, networkData []byte, dir string) (*cloudinit.Netplan, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	input := filepath.Join(dir, "network_data.json")
	if err := os.WriteFile(input, networkData, 0o644); err != nil {
		return nil, err
	}
	args := []string{"devel", "net-convert", "--network-data", input, "--kind", "network_data.json",
		"--distro", "ubuntu", "--output-kind", "netplan", "--directory", filepath.Join(dir, "netplan"), "--mac", NIC + "," + h.MAC}
	var output bytes.Buffer
	command := exec.CommandContext(ctx, "cloud-init", args...)
	command.Stdout, command.Stderr = &output, &output
	if err := command.Run(); err != nil {
		return nil, fmt.Errorf("host %s: cloud-init %s: %w\n%s", h.Name, strings.Join(args, " "), err, lastLine(output.String()))
	}
	files, err := filepath.Glob(filepath.Join(dir, "netplan", "etc", "netplan", "*.yaml"))
	if err != nil {
		return nil, err
	}
	if len(files) != 1 {
		return nil, fmt.Errorf("host %s: cloud-init wrote %d netplan files into %s, want 1", h.Name, len(files), dir)
	}
	data, err := os.ReadFile(files[0])
	if err != nil {
		return nil, err
	}
	plan := &cloudinit.Netplan{}
	if err := yaml.Unmarshal(data, plan); err != nil {
		return nil, fmt.Errorf("host %s: parsing cloud-init's netplan %s: %w", h.Name, files[0], err)
	}
	return plan, nil
}

// apply runs the ip commands of one ethernet on the host's NIC.
func (h *Host) apply(ctx context.Context, device cloudinit.Device) ([]string, error) {
	nic := NIC
	var commands [][]string
	if device.SetName != "" && device.SetName != NIC {
		commands = append(commands, []string{"link", "set", "dev", NIC, "name", device.SetName})
		nic = device.SetName
	}
	if device.MTU > 0 {
		commands = append(commands, []string{"link", "set", "dev", nic, "mtu", strconv.Itoa(device.MTU)})
	}
	commands = append(commands, []string{"link", "set", "dev", nic, "up"})
	for _, address := range device.Addresses {
		command := []string{"addr", "add", address, "dev", nic}
		if strings.Contains(address, ":") {
			command = append(command, "nodad") // usable at once; no other host claims it here
		}
		commands = append(commands, command)
	}
	for _, route := range device.Routes {
		family, to := "-4", route.To
		if net.ParseIP(route.Via).To4() == nil {
			family = "-6"
		}
		if to == "0.0.0.0/0" || to == "::/0" {
			to = "default"
		}
		commands = append(commands, []string{family, "route", "add", to, "via", route.Via, "dev", nic})
	}
	var applied []string
	for _, command := range commands {
		args := append([]string{"-n", h.Namespace}, command...)
		applied = append(applied, "ip "+strings.Join(args, " "))
		if _, err := ip(ctx, args...); err != nil {
			return applied, fmt.Errorf("host %s: %w", h.Name, err)
		}
	}
	return applied, nil
}

func lastLine(output string) string {
	lines := strings.Split(strings.TrimSpace(output), "\n")
	return lines[len(lines)-1]
}
