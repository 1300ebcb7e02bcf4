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
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/capm3-preprov/capm3-preprov/test/framework"
)

// ProvisioningAddress is Ironic's address on the provisioning network as a
// host's ramdisk sees it (Metal3's dev-env puts Ironic at 172.22.0.2 on
// 172.22.0.0/24). Ironic itself listens on loopback; a test that boots a
// host relays this address to it (test/consumers/ramdiskhost). Ironic writes it into
// the ISO's kernel command line (ipa-api-url, ipa-inspection-callback-url),
// and refuses a loopback address for the inspection callback.
const ProvisioningAddress = "172.22.0.2"

// RamdiskAPIPort and InspectorCallbackPort are Ironic's and
// ironic-inspector's usual ports, on ProvisioningAddress.
const (
	RamdiskAPIPort        = 6385
	InspectorCallbackPort = 5050
)

// The deploy kernel and ramdisk: Ironic copies them into the ISO it builds
// and never runs them, so small files stand for IPA's.
const (
	deployKernel  = "ironic-python-agent.kernel"
	deployRamdisk = "ironic-python-agent.initramfs"
)

// virtualMedia is what Ironic needs beside itself to boot hosts from
// virtual media: ironic-inspector and an HTTP server for http_root.
type virtualMedia struct {
	httpRoot  string
	httpURL   string
	http      *http.Server
	inspector *framework.ProcessGroup
	// inspectorURL is ironic-inspector's API on loopback.
	inspectorURL string
	logPath      string
	// launched returns how the inspector's start ended (startInspector).
	launched func() error
}

// startVirtualMedia writes the deploy kernel and ramdisk into http_root,
// serves it over HTTP on loopback and starts ironic-inspector (its schema
// first); it does not wait for the inspector's API (waitVirtualMedia).
func (s *Server) startVirtualMedia(ctx context.Context) (*virtualMedia, error) {
	for _, binary := range []string{"ironic-inspector", "ironic-inspector-dbsync", "isoinfo"} {
		if _, err := exec.LookPath(binary); err != nil {
			return nil, fmt.Errorf("%s is not installed (%w): %s", binary, err, InstallHint)
		}
	}
	for _, file := range []string{isolinuxBin, ldlinuxC32} {
		if _, err := os.Stat(file); err != nil {
			return nil, fmt.Errorf("ironic builds the ISO with %s (packages isolinux and syslinux-common): %w: %s", file, err, InstallHint)
		}
	}
	v := &virtualMedia{httpRoot: filepath.Join(s.dir, "httpboot"), logPath: filepath.Join(filepath.Dir(s.LogPath), "ironic-inspector.log")}
	if err := os.MkdirAll(filepath.Join(s.dir, "tmp"), 0o700); err != nil {
		return nil, err
	}
	for name, content := range map[string]string{
		deployKernel:  "the test's stand-in for IPA's kernel: Ironic copies it into the ISO and never runs it\n",
		deployRamdisk: "the test's stand-in for IPA's initramfs\n",
	} {
		if err := os.MkdirAll(v.httpRoot, 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(v.httpRoot, name), []byte(content), 0o644); err != nil {
			return nil, err
		}
	}
	listener, err := (&net.ListenConfig{}).Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	v.httpURL = "http://" + listener.Addr().String()
	v.http = &http.Server{Handler: http.FileServer(http.Dir(v.httpRoot)), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = v.http.Serve(listener) }()

	if err = v.startInspector(ctx, s.dir, s.URL); err != nil {
		_ = v.stop()
		return nil, err
	}
	return v, nil
}

// startInspector writes ironic-inspector's configuration and creates its
// schema and starts it in the background, while Ironic starts; wait
// collects the outcome.
func (v *virtualMedia) startInspector(ctx context.Context, dir, ironicURL string) error {
	port, err := framework.FreePort()
	if err != nil {
		return err
	}
	v.inspectorURL = "http://127.0.0.1:" + strconv.Itoa(port)
	config := filepath.Join(dir, "inspector.conf")
	if err = os.WriteFile(config, []byte(inspectorConfig(filepath.Join(dir, "inspector.db"), port, ironicURL)), 0o600); err != nil {
		return err
	}
	launched := make(chan error, 1)
	go func() {
		var err error
		v.inspector, err = v.launchInspector(ctx, config)
		launched <- err
	}()
	v.launched = sync.OnceValue(func() error { return <-launched })
	return nil
}

// launchInspector runs ironic-inspector-dbsync upgrade and starts
// ironic-inspector.
func (v *virtualMedia) launchInspector(ctx context.Context, config string) (*framework.ProcessGroup, error) {
	log, err := os.Create(v.logPath)
	if err != nil {
		return nil, err
	}
	defer func() { _ = log.Close() }() // an os.File buffers nothing
	return startService(ctx, log, []string{"ironic-inspector-dbsync", "--config-file", config, "upgrade"},
		"ironic-inspector", "--config-file", config)
}

// wait waits until ironic-inspector's API answers.
func (v *virtualMedia) wait(ctx context.Context) error {
	if err := v.launched(); err != nil {
		return err
	}
	err := framework.WaitForOK(ctx, v.inspectorURL, StartTimeout, v.inspector.Exited())
	if errors.Is(err, framework.ErrProcessExited) {
		return fmt.Errorf("ironic-inspector exited before its API answered: %s", v.inspector.State())
	}
	return err
}

func (v *virtualMedia) stop() error {
	var errs []error
	if v.launched != nil {
		_ = v.launched() // its error was wait's
	}
	if v.inspector != nil {
		v.inspector.Stop()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := v.http.Shutdown(ctx); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Debian's paths of the BIOS boot loader Ironic puts into the ISO; Ironic's
// default isolinux_bin (/usr/lib/syslinux/isolinux.bin) does not exist on
// Debian.
const (
	isolinuxBin = "/usr/lib/ISOLINUX/isolinux.bin"
	ldlinuxC32  = "/usr/lib/syslinux/modules/bios/ldlinux.c32"
)

// virtualMediaConfig is what Ironic needs, beyond the fake hardware of
// configFile, to boot a host's ramdisk from virtual media as Metal3's
// Ironic does: the redfish hardware type with boot redfish-virtual-media
// and inspect inspector (Ironic 21.4 has no built-in inspection), the ISO
// served from http_root (no Swift), fast track so the ramdisk is told the
// API's URL (ipa-api-url), and the URLs the ramdisk calls on the
// provisioning network.
func (v *virtualMedia) config(dir string) (defaults, sections string) {
	defaults = fmt.Sprintf(`isolinux_bin = %s
ldlinux_c32 = %s
tempdir = %s
`, isolinuxBin, ldlinuxC32, filepath.Join(dir, "tmp"))
	sections = fmt.Sprintf(`
[deploy]
http_url = %s
http_root = %s
iso_master_path = %s
fast_track = true

[redfish]
use_swift = false

[inspector]
auth_type = none
endpoint_override = %s
callback_endpoint_override = http://%s:%d

[service_catalog]
auth_type = none
endpoint_override = http://%s:%d
`, v.httpURL, v.httpRoot, filepath.Join(dir, "master_iso_images"),
		v.inspectorURL, ProvisioningAddress, InspectorCallbackPort, ProvisioningAddress, RamdiskAPIPort)
	return defaults, sections
}

// inspectorConfig runs ironic-inspector in one process on loopback with
// sqlite, no authentication and no message bus, its PXE filter off (no
// DHCP server exists to filter), talking to Ironic on loopback.
func inspectorConfig(database string, port int, ironicURL string) string {
	return fmt.Sprintf(`[DEFAULT]
auth_strategy = noauth
transport_url = fake://
listen_address = 127.0.0.1
listen_port = %d
use_stderr = true

[database]
connection = sqlite:///%s

[ironic]
auth_type = none
endpoint_override = %s

[pxe_filter]
driver = noop
`, port, database, ironicURL)
}
