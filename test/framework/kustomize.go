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

package framework

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// KustomizeBuild runs bin/kustomize (make builds it) on a folder of config/,
// writes the output to file and reads its objects: what a user installs,
// patches included.
func KustomizeBuild(ctx context.Context, folder, file string) ([]*unstructured.Unstructured, error) {
	root := RepoRoot()
	out, err := exec.CommandContext(ctx, filepath.Join(root, "bin", "kustomize"), "build", filepath.Join(root, "config", folder)).Output()
	if err != nil {
		return nil, fmt.Errorf("kustomize build config/%s (make builds bin/kustomize): %w", folder, err)
	}
	if err := os.WriteFile(file, out, 0o644); err != nil {
		return nil, err
	}
	return ReadObjects(file)
}
