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
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
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
