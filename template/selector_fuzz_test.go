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

package template

import (
	"encoding/json"
	"strings"
	"testing"

	capm3 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/labels"
)

// FuzzHostSelector feeds arbitrary selectors and host labels. HostSelector
// must not panic; it returns either a one-line error naming the selector
// field, or a selector that answers for any labels, and the same answer
// every time (it is used by the controller and by the template mapping).
func FuzzHostSelector(f *testing.F) {
	f.Add(`{"matchLabels": {"role": "worker"}}`, `{"role": "worker"}`)
	f.Add(`{"matchExpressions": [{"key": "rack", "operator": "In", "values": ["r1", "r2"]}]}`, `{"rack": "r2"}`)
	f.Add(`{"matchExpressions": [{"key": "rack", "operator": "!"}]}`, `{}`)
	f.Add(`{"matchExpressions": [{"key": "size", "operator": "gt", "values": ["3"]}]}`, `{"size": "4"}`)
	f.Add(`{"matchLabels": {"bad key": "x"}}`, `{}`)
	f.Add(`{}`, `null`)

	f.Fuzz(func(t *testing.T, selectorJSON, labelsJSON string) {
		var hostSelector capm3.HostSelector
		var hostLabels map[string]string
		if json.Unmarshal([]byte(selectorJSON), &hostSelector) != nil || json.Unmarshal([]byte(labelsJSON), &hostLabels) != nil {
			t.Skip("not a selector or a label set")
		}
		selector, err := HostSelector(hostSelector)
		if err != nil {
			require.NotEmpty(t, err.Error())
			require.NotContains(t, err.Error(), "\n")
			require.True(t, strings.HasPrefix(err.Error(), "hostSelector."), "error does not name the field: %v", err)
			return
		}
		first := selector.Matches(labels.Set(hostLabels))
		again, err := HostSelector(hostSelector)
		require.NoError(t, err)
		require.Equal(t, first, again.Matches(labels.Set(hostLabels)))
	})
}
