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

package clusterctl_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// clusterctlLDFlags stamp the version clusterctl reports and checks
// providers' contracts against; the same as the Makefile's clusterctl target.
var clusterctlLDFlags = strings.Join([]string{
	"-X sigs.k8s.io/cluster-api/version.gitMajor=1",
	"-X sigs.k8s.io/cluster-api/version.gitMinor=13",
	"-X sigs.k8s.io/cluster-api/version.gitVersion=" + capiVersion,
	"-X sigs.k8s.io/cluster-api/version.gitCommit=27f464418c195d96ae2ef4b96f3b6a047ea89310",
	"-X sigs.k8s.io/cluster-api/version.gitTreeState=clean",
	"-X sigs.k8s.io/cluster-api/version.buildDate=2026-07-14T11:31:17Z",
}, " ")

// clusterctlBinary returns bin/clusterctl, built from hack/tools/clusterctl
// first when it is missing or not the pinned version.
func clusterctlBinary(ctx context.Context, root string) (string, error) {
	binary := filepath.Join(root, "bin", "clusterctl")
	out, err := exec.CommandContext(ctx, binary, "version", "-o", "short").Output()
	if err == nil && strings.TrimSpace(string(out)) == capiVersion {
		return binary, nil
	}
	return binary, goBuild(ctx, filepath.Join(root, "hack", "tools", "clusterctl"), binary,
		"sigs.k8s.io/cluster-api/cmd/clusterctl", clusterctlLDFlags)
}

// kustomizeBinary returns bin/kustomize, built from hack/tools/kustomize
// first when it is missing.
func kustomizeBinary(ctx context.Context, root string) (string, error) {
	binary := filepath.Join(root, "bin", "kustomize")
	if _, err := os.Stat(binary); err == nil {
		return binary, nil
	}
	return binary, goBuild(ctx, filepath.Join(root, "hack", "tools", "kustomize"), binary,
		"sigs.k8s.io/kustomize/kustomize/v5", "")
}

func goBuild(ctx context.Context, moduleDir, binary, pkg, ldflags string) error {
	fmt.Fprintf(os.Stderr, "building %s (once, a few minutes)\n", binary)
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags", ldflags, "-o", binary, pkg)
	cmd.Dir = moduleDir
	cmd.Env = os.Environ()
	// The checksum database lacks the metal3-io and some k8s.io modules.
	if os.Getenv("GONOSUMDB") == "" {
		cmd.Env = append(cmd.Env, "GONOSUMDB=github.com/metal3-io,k8s.io")
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("building %s: %w\n%s", pkg, err, out)
	}
	return nil
}

// output runs a command and returns its standard output; the error carries
// its standard error.
func output(cmd *exec.Cmd) (string, error) {
	stdout, _, err := outputs(cmd)
	return stdout, err
}

// outputs runs a command and returns its standard output and error.
func outputs(cmd *exec.Cmd) (string, string, error) {
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), stderr.String(), fmt.Errorf("%s: %w\n%s%s", strings.Join(cmd.Args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String(), stderr.String(), nil
}
