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
	"encoding/json"
	"testing"

	capm3 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
)

// The template webhooks as the API server serves them (config/webhook): that
// they are called on create and update, that their answer reaches the client
// with its causes, and what the CRD schema refuses before them. The rules
// themselves are tested by calling the validator directly
// (metal3preprovisioningtemplate_webhook_test.go).

const deniedByWebhook = `admission webhook "validation.metal3preprovisioningtemplate.infrastructure.cluster.x-k8s.io" denied the request`

func TestTemplateWebhookServesCreates(t *testing.T) {
	c := apiClient(t)
	t.Run("a valid template is stored", func(t *testing.T) {
		template := servedTemplate(t, inlineSpec)
		sent := template.DeepCopy()
		require.NoError(t, c.Create(context.Background(), template))
		got := &preprovv1.Metal3PreprovisioningTemplate{}
		require.NoError(t, c.Get(context.Background(), client.ObjectKeyFromObject(template), got))
		assert.Equal(t, sent.Spec.HostSelector, got.Spec.HostSelector)
		assert.Equal(t, sent.Spec.NetworkData, got.Spec.NetworkData)
	})
	t.Run("an invalid template is refused by the webhook with its causes", func(t *testing.T) {
		err := c.Create(context.Background(), servedTemplate(t, `{"hostSelector": {}, "dataTemplateRef": {"name": "prov-data"}}`))
		requireInvalid(t, err, "spec.hostSelector", deniedByWebhook, "selects every BareMetalHost of the namespace")
	})
	t.Run("the CRD schema refuses before the webhook", func(t *testing.T) {
		err := c.Create(context.Background(), servedTemplate(t, withIPv4(
			`{"id": "prov", "link": "eth0", "ipAddressFromIPPool": "prov-v4", "routes": [{"network": "10.0.0.0", "prefix": 33, "gateway": {"string": "192.0.2.1"}}]}`)))
		requireInvalid(t, err, "spec.networkData.networks.ipv4[0].routes[0].prefix", "should be less than or equal to 32")
		assert.NotContains(t, err.Error(), "admission webhook")
	})
}

func TestTemplateWebhookServesUpdates(t *testing.T) {
	ctx := context.Background()
	c := apiClient(t)
	template := servedTemplate(t, inlineSpec)
	require.NoError(t, c.Create(ctx, template))
	created := template.DeepCopy()

	template.Spec.HostSelector = capm3.HostSelector{}
	requireInvalid(t, c.Update(ctx, template), "spec.hostSelector", deniedByWebhook, "selects every BareMetalHost")
	got := &preprovv1.Metal3PreprovisioningTemplate{}
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(template), got))
	assert.Equal(t, created.Spec, got.Spec, "a rejected update must change nothing")

	got.Spec.HostSelector.MatchLabels["rack"] = "r2"
	require.NoError(t, c.Update(ctx, got), "a valid update is stored")
}

func TestProvisionedHostPolicyDefaults(t *testing.T) {
	tests := []struct {
		name   string
		policy any // nil leaves the field out
		want   preprovv1.ProvisionedHostPolicy
	}{
		// The CRD default fills an absent field; so does the webhook.
		{name: "absent", want: preprovv1.ProvisionedHostReportDrift},
		// Only the webhook turns "" into the default; the CRD enum alone refuses it.
		{name: "empty", policy: "", want: preprovv1.ProvisionedHostReportDrift},
		{name: "set", policy: "Update", want: preprovv1.ProvisionedHostUpdate},
	}
	c := apiClient(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			template := newUnstructuredTemplate(t, dataTemplateRefSpec)
			if tt.policy != nil {
				require.NoError(t, unstructured.SetNestedField(template.Object, tt.policy, "spec", "provisionedHostPolicy"))
			}
			require.NoError(t, c.Create(context.Background(), template))
			got := &preprovv1.Metal3PreprovisioningTemplate{}
			require.NoError(t, c.Get(context.Background(), client.ObjectKeyFromObject(template), got))
			assert.Equal(t, tt.want, got.Spec.ProvisionedHostPolicy)
		})
	}
}

// servedTemplate is newTemplate with a generated name, so tests that share
// the namespace do not meet.
func servedTemplate(t *testing.T, spec string) *preprovv1.Metal3PreprovisioningTemplate {
	t.Helper()
	template := newTemplate(t, spec)
	template.Name, template.GenerateName = "", "m3ppt-"
	return template
}

// newUnstructuredTemplate sends the spec as written, empty strings included.
func newUnstructuredTemplate(t *testing.T, spec string) *unstructured.Unstructured {
	t.Helper()
	template := &unstructured.Unstructured{Object: map[string]any{}}
	template.SetGroupVersionKind(preprovv1.GroupVersion.WithKind("Metal3PreprovisioningTemplate"))
	template.SetGenerateName("m3ppt-")
	template.SetNamespace("default")
	var specFields map[string]any
	require.NoError(t, json.Unmarshal([]byte(spec), &specFields))
	template.Object["spec"] = specFields
	return template
}
