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
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/noauth"
	"github.com/gophercloud/gophercloud/v2/openstack/utils"

	"github.com/capm3-preprov/capm3-preprov/test/consumers/ironic"
	"github.com/capm3-preprov/capm3-preprov/test/framework"
)

// StartTimeout bounds the wait for Ironic's API to answer (Python imports
// on 2 busy cores, and the schema created first).
const StartTimeout = 5 * time.Minute

// The deploy kernel and ramdisk: Ironic copies them into the ISO it builds;
// the agent runs from the root instead, so small files stand for them.
const (
	deployKernel  = "ironic-python-agent.kernel"
	deployRamdisk = "ironic-python-agent.initramfs"
)

// Ironic is Ironic 29 from the root: the API and the conductor as one
// process on loopback, an HTTP server for its http_root on loopback.
type Ironic struct {
	// URL is the API on loopback, http://127.0.0.1:<port>.
	URL string
	// LogPath is Ironic's log.
	LogPath string
	// Work is the folder mounted at /mnt in the root: configuration,
	// database, http_root.
	Work string

	httpURL string
	http    *http.Server
	process *framework.ProcessGroup
	client  *gophercloud.ServiceClient
}

// StartIronic writes Ironic's configuration into work, creates its schema
// (ironic-dbsync), starts `ironic` in the root and waits until GET /v1
// answers. address is Ironic's address on the provisioning network, the
// one the ramdisk is given (ipa-api-url): IPv4 or IPv6, one per Ironic as
// in Metal3.
func StartIronic(ctx context.Context, root *Root, work, address string) (_ *Ironic, err error) {
	if err = requireRoot(); err != nil {
		return nil, err
	}
	s := &Ironic{Work: work, LogPath: filepath.Join(work, "ironic.log")}
	defer func() {
		if err != nil {
			err = errors.Join(err, s.Stop())
		}
	}()
	httpRoot := filepath.Join(work, "httpboot")
	for _, folder := range []string{httpRoot, filepath.Join(work, "tmp"), filepath.Join(work, "state")} {
		if err = os.MkdirAll(folder, 0o755); err != nil {
			return nil, err
		}
	}
	for name, content := range map[string]string{
		deployKernel:  "the test's stand-in for IPA's kernel: Ironic copies it into the ISO, the agent runs from the Debian 13 root\n",
		deployRamdisk: "the test's stand-in for IPA's initramfs\n",
	} {
		if err = os.WriteFile(filepath.Join(httpRoot, name), []byte(content), 0o644); err != nil {
			return nil, err
		}
	}
	listener, err := (&net.ListenConfig{}).Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s.httpURL = "http://" + listener.Addr().String()
	s.http = &http.Server{Handler: http.FileServer(http.Dir(httpRoot)), ReadHeaderTimeout: 10 * time.Second}
	// One connection per download: an idle connection the server closes
	// (after ReadHeaderTimeout) while Ironic reuses it fails the download
	// ("Remote end closed connection without response").
	s.http.SetKeepAlivesEnabled(false)
	go func() { _ = s.http.Serve(listener) }()

	port, err := framework.FreePort()
	if err != nil {
		return nil, err
	}
	s.URL = "http://127.0.0.1:" + strconv.Itoa(port)
	config := filepath.Join(work, "ironic.conf")
	if err = os.WriteFile(config, []byte(ironicConfig(port, s.httpURL, address)), 0o600); err != nil {
		return nil, err
	}
	log, err := os.Create(s.LogPath)
	if err != nil {
		return nil, err
	}
	defer func() { _ = log.Close() }() // an os.File buffers nothing
	where := Chroot{Work: work}
	inRoot := path.Join(WorkMount, "ironic.conf")
	if err = run(root.Command(ctx, where, "ironic-dbsync", "--config-file", inRoot, "create_schema")); err != nil {
		return nil, err
	}
	// It runs until Stop: ctx bounds only the start.
	if s.process, err = framework.StartProcessGroup(root.Command(context.WithoutCancel(ctx), where, "ironic", "--config-file", inRoot), log); err != nil {
		return nil, err
	}
	err = framework.WaitForOK(ctx, s.URL+"/v1", StartTimeout, s.process.Exited())
	if errors.Is(err, framework.ErrProcessExited) {
		return nil, fmt.Errorf("ironic exited before its API answered: %s; its log ends with:\n%s", s.process.State(), fileTail(s.LogPath, 20))
	}
	if err != nil {
		return nil, fmt.Errorf("ironic's API: %w (log: %s)", err, s.LogPath)
	}
	if s.client, err = newClient(ctx, s.URL); err != nil {
		return nil, fmt.Errorf("%w (log: %s)", err, s.LogPath)
	}
	return s, nil
}

// newClient is gophercloud's noauth bare metal client, as BMO builds it,
// at the newest microversion Ironic offers.
func newClient(ctx context.Context, url string) (*gophercloud.ServiceClient, error) {
	client, err := noauth.NewBareMetalNoAuth(noauth.EndpointOpts{IronicEndpoint: url + "/v1/"})
	if err != nil {
		return nil, err
	}
	versions, err := utils.GetSupportedMicroversions(ctx, client)
	if err != nil {
		return nil, fmt.Errorf("reading ironic's API microversions: %w", err)
	}
	client.Microversion = fmt.Sprintf("%d.%d", versions.MaxMajor, versions.MaxMinor)
	return client, nil
}

// Stop ends Ironic and the HTTP server. The work folder stays.
func (s *Ironic) Stop() error {
	if s.process != nil {
		s.process.Stop()
	}
	if s.http == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return s.http.Shutdown(ctx)
}

// Running says whether Ironic is still there.
func (s *Ironic) Running() bool {
	return s.process != nil && s.process.Running()
}

// ironicConfig is Metal3's ironic-image configuration (ironic.conf.j2 with
// its defaults: fast track, agent inspection, noop network, no DHCP) for
// one process with the API and the conductor on loopback, sqlite and no
// message bus, the redfish hardware type only, and the paths of the root.
// The URLs the ramdisk is given are on the provisioning network (address),
// which a relay forwards to loopback.
func ironicConfig(port int, httpURL, address string) string {
	return fmt.Sprintf(`[DEFAULT]
auth_strategy = noauth
debug = true
rpc_transport = none
host = localhost
use_stderr = true
hash_ring_algorithm = sha256
my_ip = %[3]s
state_path = %[5]s/state
tempdir = %[5]s/tmp
isolinux_bin = /usr/lib/ISOLINUX/isolinux.bin
ldlinux_c32 = /usr/lib/syslinux/modules/bios/ldlinux.c32
enabled_hardware_types = redfish
default_inspect_interface = agent
default_network_interface = noop
enabled_bios_interfaces = no-bios,redfish
enabled_boot_interfaces = redfish-virtual-media
enabled_console_interfaces = no-console
enabled_deploy_interfaces = direct,ramdisk,custom-agent
enabled_firmware_interfaces = no-firmware,redfish
enabled_inspect_interfaces = no-inspect,agent,redfish
enabled_management_interfaces = redfish
enabled_network_interfaces = noop
enabled_power_interfaces = redfish
enabled_raid_interfaces = no-raid,agent,redfish
enabled_rescue_interfaces = no-rescue
enabled_storage_interfaces = noop
enabled_vendor_interfaces = no-vendor,redfish

[api]
host_ip = 127.0.0.1
port = %[1]d

[conductor]
node_history = False

[database]
connection = sqlite:///%[5]s/ironic.db
sqlite_synchronous = False

[deploy]
http_root = %[5]s/httpboot
http_url = %[2]s
fast_track = true
iso_master_path = %[5]s/master_iso_images

[dhcp]
dhcp_provider = none

[inspector]
require_managed_boot = False
power_off = false
extra_kernel_params = ipa-inspection-collectors=default,logs ipa-enable-vlan-interfaces=all ipa-inspection-dhcp-all-interfaces=1 ipa-collect-lldp=1
hooks = $default_hooks,parse-lldp
add_ports = all
keep_ports = present

[nova]
send_power_notifications = false

[redfish]
use_swift = false
kernel_append_params = nofb nomodeset vga=normal ipa-insecure=1 systemd.journald.forward_to_console=yes

[service_catalog]
auth_type = none
endpoint_override = http://%[4]s
`, port, httpURL, address, net.JoinHostPort(address, strconv.Itoa(ironic.RamdiskAPIPort)), WorkMount)
}
