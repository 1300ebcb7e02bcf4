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
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/capm3-preprov/capm3-preprov/test/framework"
)

// dhcplessVariables are the variables of the dhcpless flavor; the
// preprov-template flavor has them all, plus its preprovisioning pool's.
var (
	dhcplessVariables = []string{
		"BOOT_INTERFACE", "CLUSTER_APIENDPOINT_HOST", "CLUSTER_APIENDPOINT_PORT", "CLUSTER_NAME",
		"CONTROL_PLANE_MACHINE_COUNT", "DNS_SERVER", "GATEWAY", "IMAGE_CHECKSUM", "IMAGE_CHECKSUM_TYPE",
		"IMAGE_FORMAT", "IMAGE_URL", "KUBERNETES_VERSION", "NAMESPACE", "POD_CIDR",
		"PROVISIONING_POOL_PREFIX", "PROVISIONING_POOL_RANGE_END", "PROVISIONING_POOL_RANGE_START",
		"SERVICE_CIDR", "WORKER_MACHINE_COUNT",
	}
	preprovTemplateVariables = append(slices.Clone(dhcplessVariables),
		"PREPROVISIONING_DNS_SERVER", "PREPROVISIONING_GATEWAY", "PREPROVISIONING_POOL_PREFIX",
		"PREPROVISIONING_POOL_RANGE_END", "PREPROVISIONING_POOL_RANGE_START",
	)
)

// optionalVariable is a line of `clusterctl generate cluster --list-variables`.
var optionalVariable = regexp.MustCompile(`(?m)^\s+- (\w+)\s+\(defaults to (.*)\)$`)

func TestListVariables(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(framework.RepoRoot(), "docs", "clusterctl.md"))
	require.NoError(t, err)
	for flavor, want := range map[string][]string{
		"dhcpless":         dhcplessVariables,
		"preprov-template": preprovTemplateVariables,
	} {
		t.Run(flavor, func(t *testing.T) {
			out, _, err := repo.run(context.Background(), nil, "generate", "cluster", "test",
				"--infrastructure", providerName+":"+providerVersion, "--target-namespace", "metal3",
				"--flavor", flavor, "--list-variables")
			require.NoError(t, err)
			assert.NotContains(t, out, "Required Variables", "a cluster name is all a flavor needs")

			defaults := map[string]string{}
			for _, match := range optionalVariable.FindAllStringSubmatch(out, -1) {
				defaults[match[1]] = match[2]
			}
			assert.ElementsMatch(t, want, slices.Collect(maps.Keys(defaults)))

			// The docs' table lists every variable with the template's default;
			// clusterctl's own defaults (name, namespace, counts) are unquoted.
			for name, value := range defaults {
				row := "| `" + name + "` |"
				if strings.HasPrefix(value, `"`) {
					row += " `" + strings.Trim(value, `"`) + "` |"
				}
				assert.Contains(t, string(doc), row, "docs/clusterctl.md variables table")
			}
		})
	}
}
