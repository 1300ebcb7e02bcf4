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

// Package ironic runs the one real Ironic of the tests: Ironic 29 from
// Debian 13's packages (ironic-api and ironic-conductor as one process) in
// the Debian 13 root hack/debian13-root.sh builds under bin/ (root.go),
// configured as Metal3's ironic-image runs it for hosts that boot their
// ramdisk from virtual media (config.go), with fake hardware enabled beside
// redfish. Its client hands Ironic a host's network data as BMO does
// (network_data.go: fake-hardware nodes, for what Ironic's API accepts and
// refuses) and registers and inspects a host as BMO HEAD does
// (register.go), after which Ironic builds the ISO a host boots its
// ramdisk from. Nothing here imitates Ironic: what it accepts, refuses and
// builds is Ironic's own. test/consumers/agent runs the real
// ironic-python-agent against it.
package ironic

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

	"github.com/capm3-preprov/capm3-preprov/test/consumers/networkdataschema"
	"github.com/capm3-preprov/capm3-preprov/test/framework"
)

// StartTimeout bounds the wait for Ironic's API to answer (Python imports
// on 2 busy cores, and the schema created first).
const StartTimeout = 5 * time.Minute

// ProvisioningAddress is Ironic's IPv4 address on the provisioning network
// as a host's ramdisk sees it (Metal3's dev-env puts Ironic at 172.22.0.2
// on 172.22.0.0/24). Ironic itself listens on loopback; a test that boots
// a host relays this address to it (test/consumers/ramdiskhost). Ironic
// writes it into the ISO's kernel command line (ipa-api-url, from which
// the agent derives its inspection callback).
const ProvisioningAddress = "172.22.0.2"

// ProvisioningIPv6Address is Ironic's address on an IPv6 provisioning
// network: Metal3 runs one Ironic per address family its ramdisks reach it
// over (ipa-api-url holds one URL).
const ProvisioningIPv6Address = "fd2e:6f44:5dd8:c956::2"

// RamdiskAPIPort is Ironic's usual port, on the provisioning address.
const RamdiskAPIPort = 6385

// The deploy kernel and ramdisk: Ironic copies them into the ISO it
// builds; the agent runs from the root instead, so small files stand for
// them.
const (
	deployKernel  = "ironic-python-agent.kernel"
	deployRamdisk = "ironic-python-agent.initramfs"
)

// Options says where Ironic runs and keeps its files.
type Options struct {
	// Root is the Debian 13 root. Default: FindRoot's.
	Root *Root
	// Dir is the work folder, mounted at /mnt in the root: the
	// configuration, the sqlite database, http_root. Default: a new
	// temporary folder, removed by Stop.
	Dir string
	// LogPath is Ironic's log (its stdout and stderr). Default: ironic.log
	// in a new temporary folder. Stop keeps it.
	LogPath string
	// Address is Ironic's address on the provisioning network, the one the
	// ramdisk is given (ipa-api-url). Default: ProvisioningAddress.
	Address string
}

// Server is one Ironic 29 process: the API and the conductor on loopback,
// and an HTTP server for its http_root on loopback.
type Server struct {
	// URL is the API on loopback, http://127.0.0.1:<port>.
	URL string
	// LogPath is Ironic's log; errors name it.
	LogPath string
	// Address is Ironic's address on the provisioning network.
	Address string
	// Root is the Debian 13 root Ironic runs in.
	Root *Root

	dir, removeDir string
	httpURL        string
	http           *http.Server
	process        *framework.ProcessGroup
	client         *gophercloud.ServiceClient
	// schema is Ironic's network_data schema, read from the root.
	schema *networkdataschema.Schema
}

// Start writes Ironic's configuration, creates its schema (ironic-dbsync),
// starts `ironic` in the root and waits until GET /v1 answers. It fails,
// naming hack/debian13-root.sh, when the process is not root or the root
// is missing. On error, what was started is stopped and the error names
// the log.
func Start(ctx context.Context, opts Options) (_ *Server, err error) {
	if err = RequireRoot(); err != nil {
		return nil, err
	}
	s := &Server{Root: opts.Root, dir: opts.Dir, LogPath: opts.LogPath, Address: opts.Address}
	if s.Root == nil {
		if s.Root, err = FindRoot(ctx); err != nil {
			return nil, err
		}
	}
	if s.Address == "" {
		s.Address = ProvisioningAddress
	}
	if s.schema, err = networkdataschema.Load(networkdataschema.InRoot(s.Root.Dir)); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, s.Stop())
		}
	}()
	if err = s.makeFolders(); err != nil {
		return nil, err
	}
	if err = s.serveHTTPRoot(ctx); err != nil {
		return nil, err
	}
	port, err := framework.FreePort()
	if err != nil {
		return nil, err
	}
	s.URL = "http://127.0.0.1:" + strconv.Itoa(port)
	if err = os.WriteFile(filepath.Join(s.dir, "ironic.conf"), []byte(configFile(port, s.httpURL, s.Address)), 0o600); err != nil {
		return nil, err
	}
	if err = s.startProcess(ctx); err != nil {
		return nil, err
	}
	if s.client, err = newClient(ctx, s.URL); err != nil {
		return nil, fmt.Errorf("%w (log: %s)", err, s.LogPath)
	}
	return s, nil
}

// makeFolders makes the work folder, its http_root with the deploy kernel
// and ramdisk, and the log's folder.
func (s *Server) makeFolders() (err error) {
	if s.dir == "" {
		if s.dir, err = os.MkdirTemp("", "ironic-"); err != nil {
			return err
		}
		s.removeDir = s.dir
	}
	if s.LogPath == "" {
		var logDir string
		if logDir, err = os.MkdirTemp("", "ironic-log-"); err != nil {
			return err
		}
		s.LogPath = filepath.Join(logDir, "ironic.log")
	}
	httpRoot := filepath.Join(s.dir, "httpboot")
	for _, folder := range []string{httpRoot, filepath.Join(s.dir, "tmp"), filepath.Join(s.dir, "state")} {
		if err = os.MkdirAll(folder, 0o755); err != nil {
			return err
		}
	}
	for name, content := range map[string]string{
		deployKernel:  "the test's stand-in for IPA's kernel: Ironic copies it into the ISO, the agent runs from the Debian 13 root\n",
		deployRamdisk: "the test's stand-in for IPA's initramfs\n",
	} {
		if err = os.WriteFile(filepath.Join(httpRoot, name), []byte(content), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// serveHTTPRoot serves http_root over HTTP on loopback: Ironic downloads
// the deploy kernel and ramdisk from it and the BMC the ISO.
func (s *Server) serveHTTPRoot(ctx context.Context) error {
	listener, err := (&net.ListenConfig{}).Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	s.httpURL = "http://" + listener.Addr().String()
	s.http = &http.Server{Handler: http.FileServer(http.Dir(filepath.Join(s.dir, "httpboot"))), ReadHeaderTimeout: 10 * time.Second}
	// One connection per download: an idle connection the server closes
	// (after ReadHeaderTimeout) while Ironic reuses it fails the download
	// ("Remote end closed connection without response").
	s.http.SetKeepAlivesEnabled(false)
	go func() { _ = s.http.Serve(listener) }()
	return nil
}

// startProcess creates Ironic's schema, starts `ironic` in the root and
// waits until its API answers.
func (s *Server) startProcess(ctx context.Context) error {
	log, err := os.Create(s.LogPath)
	if err != nil {
		return err
	}
	defer func() { _ = log.Close() }() // an os.File buffers nothing
	where := Chroot{Work: s.dir}
	config := path.Join(WorkMount, "ironic.conf")
	if err = run(s.Root.Command(ctx, where, "ironic-dbsync", "--config-file", config, "create_schema")); err != nil {
		return err
	}
	// It runs until Stop: ctx bounds only the start.
	if s.process, err = framework.StartProcessGroup(s.Root.Command(context.WithoutCancel(ctx), where, "ironic", "--config-file", config), log); err != nil {
		return err
	}
	err = framework.WaitForOK(ctx, s.URL+"/v1", StartTimeout, s.process.Exited())
	if errors.Is(err, framework.ErrProcessExited) {
		return fmt.Errorf("ironic exited before its API answered: %s; its log ends with:\n%s", s.process.State(), FileTail(s.LogPath, 20))
	}
	if err != nil {
		return fmt.Errorf("ironic's API: %w (log: %s)", err, s.LogPath)
	}
	return nil
}

// newClient is gophercloud's noauth bare metal client, as BMO builds it,
// at the newest microversion Ironic offers (Ironic 29 offers more than
// BMO HEAD's baseline, 1.89).
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

// Stop ends Ironic (SIGTERM, then SIGKILL after 10 s) and the HTTP server,
// and removes a temporary work folder. The log stays.
func (s *Server) Stop() error {
	if s.process != nil {
		s.process.Stop()
	}
	var errs []error
	if s.http != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		errs = append(errs, s.http.Shutdown(ctx))
	}
	if s.removeDir != "" {
		errs = append(errs, os.RemoveAll(s.removeDir))
	}
	return errors.Join(errs...)
}

// Running says whether Ironic is still there.
func (s *Server) Running() bool {
	return s.process != nil && s.process.Running()
}
