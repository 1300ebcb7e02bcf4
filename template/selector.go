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
	"fmt"
	"strings"

	capm3 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
)

// HostSelector turns a CAPM3 HostSelector into a label selector with CAPM3's
// semantics: matchLabels are equality requirements, matchExpressions use the
// operator lower-cased (in, notin, exists, "!", =, ==, !=, gt, lt), and an
// empty selector selects every host.
func HostSelector(hs capm3.HostSelector) (labels.Selector, error) {
	selector := labels.NewSelector()
	for key, value := range hs.MatchLabels {
		requirement, err := labels.NewRequirement(key, selection.Equals, []string{value})
		if err != nil {
			return nil, fmt.Errorf("hostSelector.matchLabels %q: %w", key, err)
		}
		selector = selector.Add(*requirement)
	}
	for i, expression := range hs.MatchExpressions {
		operator := selection.Operator(strings.ToLower(string(expression.Operator)))
		requirement, err := labels.NewRequirement(expression.Key, operator, expression.Values)
		if err != nil {
			return nil, fmt.Errorf("hostSelector.matchExpressions[%d] (key %q, operator %q): %w",
				i, expression.Key, expression.Operator, err)
		}
		selector = selector.Add(*requirement)
	}
	return selector, nil
}
