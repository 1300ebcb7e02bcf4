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

package webhooks

import (
	"context"
	"fmt"
	"time"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	capm3 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/internal/index"
	"github.com/capm3-preprov/capm3-preprov/template"
)

// capm3NameWarnings warns about the hosts the template selects that are
// named like a Metal3Data: CAPM3 (DataTemplateManager) names Metal3Data
// "<Metal3DataTemplate>-<index>", and DataManager.ensureM3IPClaim looks up
// the claim "<Metal3Data>-<pool>" before "<bmh>-<pool>", so such a host's
// claims "<host>-<pool>" meet those of the host that Metal3Data is for.
// Warnings only: the names meet only once CAPM3 makes that Metal3Data.
//
// It reads the manager's cache (slim hosts), and through an index only the
// hosts so named: a namespace holds thousands of hosts, each mostly
// inspection data, and a dry run (kubectl apply --dry-run=server) is as
// frequent as a write.
func (v templateValidator) capm3NameWarnings(ctx context.Context, m3ppt *preprovv1.Metal3PreprovisioningTemplate) admission.Warnings {
	selector, err := template.HostSelector(m3ppt.Spec.HostSelector)
	if err != nil || v.reader == nil {
		return nil
	}
	// A cache still filling (the manager has just started) delays no write.
	ctx, cancel := context.WithTimeout(ctx, cacheWaitForWarnings)
	defer cancel()
	dataTemplates := &capm3.Metal3DataTemplateList{}
	if err := v.reader.List(ctx, dataTemplates, client.InNamespace(m3ppt.Namespace), client.UnsafeDisableDeepCopy); err != nil {
		return nil
	}
	var warnings admission.Warnings
	for _, dataTemplate := range dataTemplates.Items {
		hosts := &bmov1alpha1.BareMetalHostList{}
		if err := v.reader.List(ctx, hosts, client.InNamespace(m3ppt.Namespace), client.UnsafeDisableDeepCopy,
			client.MatchingFields{index.HostNameStemField: dataTemplate.Name}, client.MatchingLabelsSelector{Selector: selector}); err != nil {
			return nil
		}
		for _, host := range hosts.Items {
			warnings = append(warnings, fmt.Sprintf("BareMetalHost %q, which this template selects, is named like a Metal3Data of "+
				"Metal3DataTemplate %q (CAPM3 names them <Metal3DataTemplate>-<index> and looks up the IPClaim <Metal3Data>-<pool> "+
				"before <host>-<pool>): its IPClaims can meet another host's; rename the host", host.Name, dataTemplate.Name))
		}
	}
	return warnings
}

// cacheWaitForWarnings bounds how long a request waits for the cache to
// fill before it is admitted without warnings; the API server gives a
// webhook 10 s.
const cacheWaitForWarnings = 3 * time.Second
