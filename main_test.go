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
	"flag"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/capm3-preprov/capm3-preprov/test/framework"
)

// updateREADME rewrites README.md's flag table: make docs-flags.
var updateREADME = flag.Bool("update-readme", false, "rewrite README.md's flag table from the manager's flags")

// The README's flag table sits between these lines.
const (
	flagTableStart = "<!-- flag table: generated from the manager's flags by make docs-flags -->"
	flagTableEnd   = "<!-- end of flag table -->"
)

// TestREADMEFlagTable: README's flag table is the one the manager's flags
// give, the same flag set bin/manager --help prints.
func TestREADMEFlagTable(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	before, rest, found := strings.Cut(string(readme), flagTableStart+"\n")
	require.True(t, found, "README.md has no line %q", flagTableStart)
	_, after, found := strings.Cut(rest, flagTableEnd)
	require.True(t, found, "README.md has no line %q", flagTableEnd)

	fs := newFlagSet("manager", &options{}, &zap.Options{})
	want := before + flagTableStart + "\n" + flagTable(fs) + flagTableEnd + after
	if *updateREADME {
		require.NoError(t, os.WriteFile("README.md", []byte(want), 0o644))
		return
	}
	assert.Equal(t, want, string(readme), "README.md's flag table is stale: run make docs-flags")
}

// flagTable is a Markdown table of every flag: name, default and the first
// line of its usage; deprecated flags say what replaces them.
func flagTable(fs *pflag.FlagSet) string {
	var table strings.Builder
	table.WriteString("| flag | default | meaning |\n| --- | --- | --- |\n")
	fs.VisitAll(func(f *pflag.Flag) {
		meaning, _, _ := strings.Cut(f.Usage, "\n")
		if f.Deprecated != "" {
			meaning = "deprecated: " + f.Deprecated
		}
		defaultValue := ""
		if f.DefValue != "" && f.DefValue != "[]" {
			defaultValue = "`" + f.DefValue + "`"
		}
		fmt.Fprintf(&table, "| `--%s` | %s | %s |\n", f.Name, defaultValue, strings.ReplaceAll(strings.TrimSpace(meaning), "|", `\|`))
	})
	return table.String()
}

// TestDeprecatedFlags: the old names still work for one release, with their
// old meaning, and are refused next to their new names.
func TestDeprecatedFlags(t *testing.T) {
	tests := []struct {
		args           []string
		wantErr        string
		wantHealthAddr string
	}{
		{args: nil, wantHealthAddr: ":9440"},
		{args: []string{"--metrics-bind-address=:8080"}, wantHealthAddr: ":9440"},
		{args: []string{"--health-probe-bind-address=:9441"}, wantHealthAddr: ":9441"},
		{args: []string{"--health-probe-bind-address=:9441", "--health-addr=:9442"}, wantErr: "set only --health-addr"},
		{args: []string{"--metrics-bind-address=:8080", "--diagnostics-address=:8443"}, wantErr: "set only --diagnostics-address"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			opts := options{}
			fs := newFlagSet("manager", &opts, &zap.Options{})
			require.NoError(t, fs.Parse(tt.args))
			err := resolveDeprecatedFlags(fs, &opts)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.wantHealthAddr, opts.healthAddr)
			if fs.Changed(metricsBindAddressFlag) {
				assert.Equal(t, ":8080", opts.diagnostics.DiagnosticsAddress)
				assert.True(t, opts.diagnostics.InsecureDiagnostics, "--metrics-bind-address served plain HTTP")
			} else {
				assert.Equal(t, ":8443", opts.diagnostics.DiagnosticsAddress)
				assert.False(t, opts.diagnostics.InsecureDiagnostics, "diagnostics are served over HTTPS by default")
			}
		})
	}
}

// TestRamdiskEndpointsFlag: comma-separated or repeated, and a bad one
// refused with the flag's name.
func TestRamdiskEndpointsFlag(t *testing.T) {
	tests := []struct {
		args    []string
		want    []string
		wantErr string
	}{
		{args: nil},
		{args: []string{"--ramdisk-endpoints=https://192.0.2.2:6385,http://[2001:db8::2]:6180"}, want: []string{"192.0.2.2", "2001:db8::2"}},
		{args: []string{"--ramdisk-endpoints=192.0.2.2", "--ramdisk-endpoints=192.0.2.3"}, want: []string{"192.0.2.2", "192.0.2.3"}},
		{args: []string{"--ramdisk-endpoints=https://ironic.local:6385"}, wantErr: `--ramdisk-endpoints: "https://ironic.local:6385" names no IP address`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			opts := options{}
			require.NoError(t, newFlagSet("manager", &opts, &zap.Options{}).Parse(tt.args))
			endpoints, err := parseRamdiskEndpoints(opts)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			var addresses []string
			for _, endpoint := range endpoints {
				addresses = append(addresses, endpoint.Address.String())
			}
			assert.Equal(t, tt.want, addresses)
		})
	}
}

// TestReadyOnlyOnceTheWebhookServes: the manager is ready, and alive, only
// once its webhook server serves; until then the API server would send
// template admissions to a Pod that cannot answer them.
func TestReadyOnlyOnceTheWebhookServes(t *testing.T) {
	certs := &envtest.WebhookInstallOptions{}
	require.NoError(t, certs.PrepWithoutInstalling())
	t.Cleanup(func() { _ = certs.Cleanup() })
	ports, err := framework.FreePorts(2)
	require.NoError(t, err)
	healthPort, webhookPort := ports[0], ports[1]
	opts := options{}
	fs := newFlagSet("manager", &opts, &zap.Options{})
	require.NoError(t, fs.Parse([]string{
		fmt.Sprintf("--health-addr=127.0.0.1:%d", healthPort), fmt.Sprintf("--webhook-port=%d", webhookPort),
		"--webhook-cert-dir=" + certs.LocalServingCertDir, "--diagnostics-address=0",
	}))
	managerOpts, err := managerOptions(opts)
	require.NoError(t, err)
	// The webhook server starts only when the test lets it.
	serve := make(chan struct{})
	managerOpts.WebhookServer = gatedWebhookServer{Server: managerOpts.WebhookServer, open: serve}
	// No controllers run: the manager reads nothing from the API server.
	managerOpts.Cache = cache.Options{}
	mgr, err := ctrl.NewManager(&rest.Config{Host: "https://127.0.0.1:1"}, managerOpts)
	require.NoError(t, err)
	require.NoError(t, addHealthChecks(mgr, true))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})

	probe := func(path string) int {
		request, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d%s", healthPort, path), http.NoBody)
		require.NoError(t, err)
		response, err := http.DefaultClient.Do(request)
		if err != nil {
			return 0
		}
		_ = response.Body.Close()
		return response.StatusCode
	}
	// The probe server answers: the manager runs, its webhook does not serve.
	require.Eventually(t, func() bool { return probe("/readyz/readyz") == http.StatusOK }, 10*time.Second, 50*time.Millisecond)
	assert.NotEqual(t, http.StatusOK, probe("/readyz"), "ready before the webhook server serves")
	assert.NotEqual(t, http.StatusOK, probe("/healthz"), "alive before the webhook server serves")

	close(serve)
	require.Eventually(t, func() bool { return probe("/readyz") == http.StatusOK && probe("/healthz") == http.StatusOK },
		10*time.Second, 50*time.Millisecond, "not ready once the webhook server serves")
}

// gatedWebhookServer starts its webhook server once open is closed.
type gatedWebhookServer struct {
	webhook.Server
	open <-chan struct{}
}

func (s gatedWebhookServer) Start(ctx context.Context) error {
	select {
	case <-s.open:
		return s.Server.Start(ctx)
	case <-ctx.Done():
		return nil
	}
}
