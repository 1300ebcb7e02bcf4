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
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/capm3-preprov/capm3-preprov/test/framework"
	standins "github.com/capm3-preprov/capm3-preprov/test/standins/clusterctl"
)

// localRepository is a clusterctl repository on disk, laid out as
// {dir}/{provider-label}/{version}/, with the clusterctl configuration that
// points ours and the stand-ins of test/standins/clusterctl at it.
type localRepository struct {
	clusterctl string
	config     string
	// home is clusterctl's HOME and XDG_CONFIG_HOME: nothing is read from
	// the real ones.
	home string
	// capiDir is the cluster-api module, for its kubeadm CRDs.
	capiDir string
}

func buildLocalRepository(ctx context.Context, dir string) (*localRepository, error) {
	root := framework.RepoRoot()
	clusterctl, err := clusterctlBinary(ctx, root)
	if err != nil {
		return nil, err
	}
	kustomize, err := kustomizeBinary(ctx, root)
	if err != nil {
		return nil, err
	}
	list := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/cluster-api")
	list.Dir = root
	capiDir, err := output(list)
	if err != nil {
		return nil, err
	}
	capiDir = strings.TrimSpace(capiDir)

	providerDir := filepath.Join(dir, providerLabel, providerVersion)
	release := exec.CommandContext(ctx, filepath.Join(root, "hack", "release-manifests.sh"))
	release.Dir = root
	release.Env = append(os.Environ(), "KUSTOMIZE="+kustomize, "OUT="+providerDir,
		"IMG="+imageName, "TAG="+providerVersion)
	if _, err = output(release); err != nil {
		return nil, err
	}
	standIns, err := standins.Build(ctx, root, kustomize, capiDir, dir)
	if err != nil {
		return nil, err
	}

	config := filepath.Join(dir, "clusterctl.yaml")
	ours := standins.Provider{
		Name: providerName, Type: "InfrastructureProvider",
		Components: filepath.Join(providerDir, "infrastructure-components.yaml"),
	}
	if err = os.WriteFile(config, []byte(standins.Config(append(standIns, ours)...)), 0o600); err != nil {
		return nil, err
	}
	home := filepath.Join(dir, "home")
	if err := os.Mkdir(home, 0o700); err != nil {
		return nil, err
	}
	return &localRepository{clusterctl: clusterctl, config: config, home: home, capiDir: capiDir}, nil
}

// run runs clusterctl with the repository's configuration and only the
// given variables in its environment, so nothing from the developer's
// shell or home leaks into what it installs or generates. It returns
// clusterctl's output and its log.
func (r *localRepository) run(ctx context.Context, vars map[string]string, args ...string) (string, string, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, r.clusterctl, append(args, "--config", r.config)...)
	cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + r.home,
		"XDG_CONFIG_HOME=" + r.home,
		"CLUSTERCTL_DISABLE_VERSIONCHECK=true",
	}
	for name, value := range vars {
		cmd.Env = append(cmd.Env, name+"="+value)
	}
	return outputs(cmd)
}
