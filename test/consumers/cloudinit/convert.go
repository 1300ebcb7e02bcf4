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

// Package cloudinit reads rendered network data with cloud-init, as the OS
// of a provisioned host (and a ramdisk built with cloud-init) does: Debian's
// cloud-init converts an OpenStack network_data document offline with
// `cloud-init devel net-convert`, and Check compares the result with the
// document. Glean, the reader of Metal3's IPA ramdisk, reads the same
// OpenStack format (docs/development.md).
package cloudinit

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"
)

// InstallHint is what a test says when the Debian package is missing.
const InstallHint = "install the Debian packages the tests need with hack/install-packages.sh (as root, or with sudo)"

// Netplan is the part of a netplan configuration these tests read.
type Netplan struct {
	Network struct {
		Version   int               `json:"version"`
		Ethernets map[string]Device `json:"ethernets"`
		Bonds     map[string]Device `json:"bonds"`
		VLANs     map[string]Device `json:"vlans"`
	} `json:"network"`
}

// Device is an ethernet, a bond or a VLAN of a netplan configuration.
type Device struct {
	Match *struct {
		MACAddress string `json:"macaddress"`
	} `json:"match"`
	SetName     string   `json:"set-name"`
	MACAddress  string   `json:"macaddress"`
	MTU         int      `json:"mtu"`
	Addresses   []string `json:"addresses"`
	DHCP4       bool     `json:"dhcp4"`
	DHCP6       bool     `json:"dhcp6"`
	AcceptRA    *bool    `json:"accept-ra"`
	Routes      []Route  `json:"routes"`
	Nameservers struct {
		Addresses []string `json:"addresses"`
	} `json:"nameservers"`
	// Bonds.
	Interfaces []string       `json:"interfaces"`
	Parameters map[string]any `json:"parameters"`
	// VLANs.
	ID   int    `json:"id"`
	Link string `json:"link"`
}

// Route is a netplan route.
type Route struct {
	To  string `json:"to"`
	Via string `json:"via"`
}

// ToNetplan converts a document to netplan in dir (etc/netplan/ below it),
// naming each ethernet link's NIC after the link (see interfaceNames), and
// returns the parsed configuration.
func ToNetplan(ctx context.Context, networkData []byte, dir string) (*Netplan, error) {
	files, err := netConvert(ctx, networkData, dir, "netplan", "etc/netplan/*.yaml")
	if err != nil {
		return nil, err
	}
	plan := &Netplan{}
	if err := yaml.Unmarshal(files[0], plan); err != nil {
		return nil, fmt.Errorf("parsing cloud-init's netplan in %s: %w", dir, err)
	}
	return plan, nil
}

// networkdDNS converts a document to systemd-networkd units in dir and
// returns the DNS servers they set.
func networkdDNS(ctx context.Context, networkData []byte, dir string) ([]string, error) {
	files, err := netConvert(ctx, networkData, dir, "networkd", "etc/systemd/network/*.network")
	if err != nil {
		return nil, err
	}
	var servers []string
	for _, file := range files {
		for _, line := range strings.Split(string(file), "\n") {
			if value, ok := strings.CutPrefix(strings.TrimSpace(line), "DNS="); ok {
				servers = append(servers, strings.Fields(value)...)
			}
		}
	}
	return servers, nil
}

// netConvert runs `cloud-init devel net-convert` and returns the files it
// wrote that match pattern; there must be at least one.
func netConvert(ctx context.Context, networkData []byte, dir, outputKind, pattern string) ([][]byte, error) {
	if _, err := exec.LookPath("cloud-init"); err != nil {
		return nil, fmt.Errorf("cloud-init is not installed (%w): %s", err, InstallHint)
	}
	names, err := interfaceNames(networkData)
	if err != nil {
		return nil, err
	}
	if err = os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	input := filepath.Join(dir, "network_data.json")
	if err = os.WriteFile(input, networkData, 0o644); err != nil {
		return nil, err
	}
	args := []string{"devel", "net-convert", "--network-data", input, "--kind", "network_data.json",
		"--distro", "ubuntu", "--output-kind", outputKind, "--directory", filepath.Join(dir, outputKind)}
	for _, mac := range slices.Sorted(maps.Keys(names)) {
		args = append(args, "--mac", names[mac]+","+mac)
	}
	var output bytes.Buffer
	command := exec.CommandContext(ctx, "cloud-init", args...)
	command.Stdout, command.Stderr = &output, &output
	if err = command.Run(); err != nil {
		return nil, fmt.Errorf("cloud-init %s: %w\n%s", strings.Join(args, " "), err, output.String())
	}
	paths, err := filepath.Glob(filepath.Join(dir, outputKind, pattern))
	if err != nil {
		return nil, err
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("cloud-init %s wrote no %s\n%s", strings.Join(args, " "), pattern, output.String())
	}
	files := make([][]byte, 0, len(paths))
	for _, path := range paths {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		files = append(files, data)
	}
	return files, nil
}

// interfaceNames maps the MAC of every ethernet link (every link that is
// neither a bond nor a VLAN) to the link's name, or its id when it has none:
// net-convert's --mac stands for the NICs a host would have, and cloud-init
// names an ethernet link's NIC by the link's name if it has one, else by the
// NIC that has its MAC. cloud-init compares MACs in lower case.
func interfaceNames(networkData []byte) (map[string]string, error) {
	var document struct {
		Links []map[string]any `json:"links"`
	}
	if err := json.Unmarshal(networkData, &document); err != nil {
		return nil, fmt.Errorf("network data is not JSON: %w", err)
	}
	names := map[string]string{}
	for _, link := range document.Links {
		if isVirtual(link) {
			continue
		}
		mac, _ := link["ethernet_mac_address"].(string)
		if mac == "" {
			return nil, fmt.Errorf("ethernet link %v has no ethernet_mac_address", link["id"])
		}
		names[strings.ToLower(mac)] = ethernetName(link)
	}
	return names, nil
}

func isVirtual(link map[string]any) bool {
	return link["type"] == "bond" || link["type"] == "vlan"
}

func ethernetName(link map[string]any) string {
	if name, ok := link["name"].(string); ok && name != "" {
		return name
	}
	return fmt.Sprint(link["id"])
}
