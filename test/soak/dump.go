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
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	"sigs.k8s.io/yaml"
)

// dump writes the objects of a quiet point that broke an invariant beside
// the logs: the audit log holds no objects, and the control plane is gone
// once the soak stops.
func (s *soak) dump(step int, snap *snapshot) (string, error) {
	var out bytes.Buffer
	sections := []struct {
		title   string
		objects any
	}{
		{"BareMetalHosts", snap.hosts}, {"IPPools", snap.pools}, {"IPClaims", snap.claims},
		{"IPAddresses", snap.addresses}, {"Metal3PreprovisioningTemplates", snap.templates},
		{"HostClaims", snap.hostClaims}, {"Metal3Data", snap.data}, {"machines using addresses", snap.uses},
	}
	for _, section := range sections {
		data, err := yaml.Marshal(section.objects)
		if err != nil {
			return "", fmt.Errorf("dumping the %s: %w", section.title, err)
		}
		fmt.Fprintf(&out, "# %s\n%s\n", section.title, data)
	}
	path := filepath.Join(s.artifacts, fmt.Sprintf("objects-at-step-%d.yaml", step))
	return path, os.WriteFile(path, out.Bytes(), 0o644)
}

// removeDumps removes the objects an earlier run dumped, which would be
// taken for this run's.
func removeDumps(artifacts string) error {
	dumps, err := filepath.Glob(filepath.Join(artifacts, "objects-at-step-*.yaml"))
	if err != nil {
		return err
	}
	for _, dump := range dumps {
		if err := os.Remove(dump); err != nil {
			return err
		}
	}
	return nil
}
