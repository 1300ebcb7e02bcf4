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

// Package ironic runs a real Ironic API for the tests: Debian's ironic-api
// and ironic-conductor (Ironic 21.4) started as one process on loopback,
// with sqlite, no authentication, no message bus and fake hardware, and a
// client that registers hosts and hands Ironic their network data the way
// BMO does. With Options.VirtualMedia it is also configured as Metal3 runs
// it for hosts that boot their ramdisk from virtual media, beside
// ironic-inspector and an HTTP server for the ISOs it builds
// (virtualmedia.go), and RegisterAndInspect takes a host through
// registration and inspection as BMO does (inspect.go). Nothing here
// imitates Ironic: what it accepts, refuses and builds is Ironic's own.
package ironic

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/noauth"
	"github.com/gophercloud/gophercloud/v2/openstack/utils"

	"github.com/capm3-preprov/capm3-preprov/test/consumers/networkdataschema"
	"github.com/capm3-preprov/capm3-preprov/test/framework"
)

// InstallHint is what a test says when the Debian packages are missing.
const InstallHint = networkdataschema.InstallHint

// network_data exists on nodes from API microversion 1.66 on.
const networkDataMicroversion = 66

// StartTimeout bounds the wait for the API to answer; it takes about 10 s on
// 2 busy cores, most of it Python imports.
const StartTimeout = 2 * time.Minute

// Options says where the server keeps its files.
type Options struct {
	// Dir holds the configuration and the sqlite database. Default: a new
	// temporary folder, removed by Stop.
	Dir string
	// LogPath is Ironic's log (its stdout and stderr). Default: ironic.log in
	// a new temporary folder. Stop keeps it.
	LogPath string
	// VirtualMedia configures Ironic as Metal3 runs it for hosts that boot
	// their ramdisk from virtual media (virtualMedia.config) and starts
	// ironic-inspector, logging beside LogPath, and an HTTP server for
	// Ironic's http_root. Fake hardware keeps working as without it.
	VirtualMedia bool
}

// Server is one Ironic process.
type Server struct {
	// URL is the API's root, http://127.0.0.1:<port>.
	URL string
	// LogPath is Ironic's log; errors name it.
	LogPath string

	dir, removeDir string
	vmedia         *virtualMedia
	ironic         *framework.ProcessGroup
	client         *gophercloud.ServiceClient
	// schema is what the installed schema says of bonds; see Submit.
	bondModes []string
}

// Start writes the configuration, creates the database schema, starts
// `ironic --config-file F` and waits until GET /v1 answers. On error, what
// was started is stopped and the error names the log.
func Start(ctx context.Context, opts Options) (_ *Server, err error) {
	for _, binary := range []string{"ironic", "ironic-dbsync"} {
		if _, err = exec.LookPath(binary); err != nil {
			return nil, fmt.Errorf("%s is not installed (%w): %s", binary, err, InstallHint)
		}
	}
	bondModes, err := schemaBondModes()
	if err != nil {
		return nil, err
	}
	s := &Server{dir: opts.Dir, LogPath: opts.LogPath, bondModes: bondModes}
	if s.dir == "" {
		if s.dir, err = os.MkdirTemp("", "ironic-"); err != nil {
			return nil, err
		}
		s.removeDir = s.dir
	} else if err = os.MkdirAll(s.dir, 0o700); err != nil {
		return nil, err
	}
	if s.LogPath == "" {
		var logDir string
		if logDir, err = os.MkdirTemp("", "ironic-log-"); err != nil {
			return nil, err
		}
		s.LogPath = filepath.Join(logDir, "ironic.log")
	}
	defer func() {
		if err != nil {
			_ = s.Stop()
		}
	}()

	port, err := framework.FreePort()
	if err != nil {
		return nil, err
	}
	logFile, err := os.Create(s.LogPath)
	if err != nil {
		return nil, err
	}
	defer func() { _ = logFile.Close() }() // an os.File buffers nothing, so no line is lost
	s.URL = "http://127.0.0.1:" + strconv.Itoa(port)
	if opts.VirtualMedia {
		if s.vmedia, err = s.startVirtualMedia(ctx); err != nil {
			return nil, err
		}
	}
	config := filepath.Join(s.dir, "ironic.conf")
	if err = os.WriteFile(config, []byte(configFile(filepath.Join(s.dir, "ironic.db"), port, s.vmedia, s.dir)), 0o600); err != nil {
		return nil, err
	}

	s.ironic, err = startService(ctx, logFile, []string{"ironic-dbsync", "--config-file", config, "create_schema"},
		"ironic", "--config-file", config)
	if err != nil {
		return nil, err
	}

	if err = s.waitReady(ctx); err != nil {
		return nil, fmt.Errorf("%w (log: %s)", err, s.LogPath)
	}
	if s.vmedia != nil {
		if err = s.vmedia.wait(ctx); err != nil {
			return nil, fmt.Errorf("%w (log: %s)", err, s.vmedia.logPath)
		}
	}
	if s.client, err = s.newClient(ctx); err != nil {
		return nil, fmt.Errorf("%w (log: %s)", err, s.LogPath)
	}
	return s, nil
}

// configFile is one process with the API and the conductor, reached only on
// loopback, with sqlite, no authentication and no message bus. Without
// virtual media only the fake hardware type is enabled, with fake or no-op
// interfaces: nothing reaches a BMC. With it, the redfish hardware type and
// the interfaces BMO picks for a redfish-virtualmedia:// BMC are enabled
// too, after the fake ones, so a node created without interfaces still
// gets fake hardware's (virtualMedia.config).
func configFile(database string, port int, vmedia *virtualMedia, dir string) string {
	hardwareTypes, interfaces, defaults, sections := "fake-hardware", fakeInterfaces, "", ""
	if vmedia != nil {
		hardwareTypes = "fake-hardware,redfish"
		interfaces = `enabled_bios_interfaces = no-bios
enabled_boot_interfaces = fake,redfish-virtual-media
enabled_console_interfaces = no-console
enabled_deploy_interfaces = fake,direct
enabled_firmware_interfaces = no-firmware
enabled_inspect_interfaces = no-inspect,inspector
enabled_management_interfaces = fake,redfish
enabled_network_interfaces = noop
enabled_power_interfaces = fake,redfish
enabled_raid_interfaces = no-raid,redfish
enabled_rescue_interfaces = no-rescue
enabled_storage_interfaces = noop
enabled_vendor_interfaces = no-vendor
`
		defaults, sections = vmedia.config(dir)
	}
	return fmt.Sprintf(`[DEFAULT]
auth_strategy = noauth
rpc_transport = none
host = localhost
use_stderr = true
enabled_hardware_types = %s
%s%s
[database]
connection = sqlite:///%s

[api]
host_ip = 127.0.0.1
port = %d

[dhcp]
dhcp_provider = none
%s`, hardwareTypes, interfaces, defaults, database, port, sections)
}

// fakeInterfaces are the fake or no-op interfaces of fake hardware.
const fakeInterfaces = `enabled_bios_interfaces = no-bios
enabled_boot_interfaces = fake
enabled_console_interfaces = no-console
enabled_deploy_interfaces = fake
enabled_firmware_interfaces = no-firmware
enabled_inspect_interfaces = no-inspect
enabled_management_interfaces = fake
enabled_network_interfaces = noop
enabled_power_interfaces = fake
enabled_raid_interfaces = no-raid
enabled_rescue_interfaces = no-rescue
enabled_storage_interfaces = noop
enabled_vendor_interfaces = no-vendor
`

// waitReady waits until GET /v1 answers 200, the process exits or the
// timeout passes.
func (s *Server) waitReady(ctx context.Context) error {
	err := framework.WaitForOK(ctx, s.URL+"/v1", StartTimeout, s.ironic.Exited())
	if errors.Is(err, framework.ErrProcessExited) {
		return fmt.Errorf("ironic exited before its API answered: %s; its log ends with:\n%s", s.ironic.State(), s.logTail(20))
	}
	if err != nil {
		return fmt.Errorf("ironic's API: %w", err)
	}
	return nil
}

// newClient is gophercloud's noauth bare metal client, as BMO builds it,
// at the newest microversion this Ironic offers. BMO asks for 1.89 or newer
// (its baseline); Ironic 21.4 offers up to 1.82, and network_data, the only
// field these tests set beyond a node's name and driver, exists from 1.66.
func (s *Server) newClient(ctx context.Context) (*gophercloud.ServiceClient, error) {
	client, err := noauth.NewBareMetalNoAuth(noauth.EndpointOpts{IronicEndpoint: s.URL + "/v1/"})
	if err != nil {
		return nil, err
	}
	versions, err := utils.GetSupportedMicroversions(ctx, client)
	if err != nil {
		return nil, fmt.Errorf("reading ironic's API microversions: %w", err)
	}
	if versions.MaxMajor != 1 || versions.MaxMinor < networkDataMicroversion {
		return nil, fmt.Errorf("ironic offers API %d.%d; network_data needs 1.%d", versions.MaxMajor, versions.MaxMinor, networkDataMicroversion)
	}
	client.Microversion = fmt.Sprintf("1.%d", versions.MaxMinor)
	return client, nil
}

// Stop ends the process (SIGTERM, then SIGKILL after 10 s) and removes the
// temporary folder of the configuration and database. The log stays.
func (s *Server) Stop() error {
	var errs []error
	if s.vmedia != nil {
		errs = append(errs, s.vmedia.stop())
	}
	if s.ironic != nil {
		s.ironic.Stop()
	}
	if s.removeDir != "" {
		errs = append(errs, os.RemoveAll(s.removeDir))
	}
	return errors.Join(errs...)
}

// Running says whether the process is still there.
func (s *Server) Running() bool {
	return s.ironic != nil && s.ironic.Running()
}

// logTail is the end of the log, for errors that would otherwise send the
// reader to the file.
func (s *Server) logTail(lines int) string {
	data, err := os.ReadFile(s.LogPath)
	if err != nil {
		return ""
	}
	all := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}
