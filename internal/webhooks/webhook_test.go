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
	"strings"
	"testing"

	capm3 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
)

const (
	selector   = `"hostSelector": {"matchLabels": {"rack": "r1"}}`
	eth0       = `{"type": "phy", "id": "eth0", "macAddress": {"fromHostInterface": "eno1"}}`
	inlineSpec = `{"hostSelector": {"matchLabels": {"rack": "r1"}, "matchExpressions": [{"key": "site", "operator": "In", "values": ["a", "b"]}]},
		"networkData": {
			"links": {"ethernets": [` + eth0 + `]},
			"networks": {"ipv4": [{"id": "prov", "link": "eth0", "ipAddressFromIPPool": "prov-v4",
				"routes": [{"network": "0.0.0.0", "prefix": 0, "gateway": {"fromIPPool": "prov-v4"}, "services": {"dnsFromIPPool": "prov-v4"}}]}]},
			"services": {"dns": ["192.0.2.53"]}}}`
	dataTemplateRefSpec = `{` + selector + `, "dataTemplateRef": {"name": "prov-data"}}`
	// bondedSpec is two NICs in an LACP bond with scalar bond parameters.
	bondedSpec = `{` + selector + `,
		"networkData": {"links": {
			"ethernets": [` + eth0 + `, {"type": "phy", "id": "eth1", "macAddress": {"string": "52:54:00:00:00:02"}}],
			"bonds": [{"id": "bond0", "bondMode": "802.3ad", "bondXmitHashPolicy": "layer3+4", "bondLinks": ["eth0", "eth1"],
				"macAddress": {"string": "52:54:00:00:00:02"}, "parameters": [{"name": "options", "value": {"miimon": 100}}]}]}},
		"bondParameters": {"bond0": {"miimon": 100, "lacp_rate": "fast"}}}`

	deniedByWebhook = `admission webhook "validation.metal3preprovisioningtemplate.infrastructure.cluster.x-k8s.io" denied the request`
)

// withNetworkData is a spec with a valid selector and this networkData.
func withNetworkData(networkData string) string {
	return `{` + selector + `, "networkData": ` + networkData + `}`
}

// withIPv4 is a spec whose networkData has eth0 and this IPv4 network.
func withIPv4(network string) string {
	return withNetworkData(`{"links": {"ethernets": [` + eth0 + `]}, "networks": {"ipv4": [` + network + `]}}`)
}

func TestValidTemplatesAreAccepted(t *testing.T) {
	c := apiClient(t)
	for name, spec := range map[string]string{
		"inline networkData":         inlineSpec,
		"dataTemplateRef":            dataTemplateRefSpec,
		"bond parameters":            bondedSpec,
		"bond parameters with a ref": `{` + selector + `, "dataTemplateRef": {"name": "prov-data"}, "bondParameters": {"bond9": {"miimon": 100}}}`,
	} {
		t.Run(name, func(t *testing.T) {
			template := newTemplate(t, spec)
			require.NoError(t, c.Create(context.Background(), template))
			got := &preprovv1.Metal3PreprovisioningTemplate{}
			require.NoError(t, c.Get(context.Background(), client.ObjectKeyFromObject(template), got))
			assert.Equal(t, template.Spec.HostSelector, got.Spec.HostSelector)
		})
	}
}

// rejectedBy says which part of the API server refuses a case: our webhook,
// or the CRD schema, which kube-apiserver checks before validating webhooks.
type rejectedBy string

const (
	byWebhook rejectedBy = "webhook"
	bySchema  rejectedBy = "schema"
)

func TestInvalidTemplatesAreRejected(t *testing.T) {
	tests := []struct {
		name     string
		spec     string
		raw      bool // send the spec as written: it does not decode into our types
		by       rejectedBy
		field    string
		contains []string
	}{
		{
			name:     "empty host selector",
			spec:     `{"hostSelector": {}, "dataTemplateRef": {"name": "prov-data"}}`,
			by:       byWebhook,
			field:    "spec.hostSelector",
			contains: []string{"selects every BareMetalHost of the namespace", "set matchLabels or matchExpressions"},
		},
		{
			name:     "invalid selector operator",
			spec:     `{"hostSelector": {"matchExpressions": [{"key": "rack", "operator": "near", "values": ["r1"]}]}, "dataTemplateRef": {"name": "prov-data"}}`,
			by:       byWebhook,
			field:    "spec.hostSelector.matchExpressions[0].operator",
			contains: []string{`Unsupported value: "near"`, `supported values: `, `"notin"`},
		},
		{
			name:     "invalid selector label key",
			spec:     `{"hostSelector": {"matchLabels": {"rack": "r1", "bad key": "x"}}, "dataTemplateRef": {"name": "prov-data"}}`,
			by:       byWebhook,
			field:    "spec.hostSelector.matchLabels[bad key]",
			contains: []string{`Invalid value: "bad key"`, "must consist of alphanumeric characters"},
		},
		{
			name:     "both networkData and dataTemplateRef",
			spec:     `{` + selector + `, "dataTemplateRef": {"name": "prov-data"}, "networkData": {"links": {"ethernets": [` + eth0 + `]}}}`,
			by:       byWebhook,
			field:    "spec.dataTemplateRef",
			contains: []string{"spec.networkData is set too", "keep exactly one of spec.networkData", "and spec.dataTemplateRef"},
		},
		{
			name:     "neither networkData nor dataTemplateRef",
			spec:     `{` + selector + `}`,
			by:       byWebhook,
			field:    "spec",
			contains: []string{"set exactly one of spec.networkData", "and spec.dataTemplateRef"},
		},
		{
			name:     "dataTemplateRef without a name",
			spec:     `{` + selector + `, "dataTemplateRef": {}}`,
			by:       byWebhook,
			field:    "spec.dataTemplateRef.name",
			contains: []string{"name the Metal3DataTemplate"},
		},
		{
			// The same id twice in one list is a schema error (list-map key).
			name: "duplicate link id across link types",
			spec: withNetworkData(`{"links": {"ethernets": [` + eth0 + `, {"type": "phy", "id": "eth1", "macAddress": {"fromHostInterface": "eno2"}}],
				"vlans": [{"id": "eth0", "vlanID": 10, "vlanLink": "eth1", "macAddress": {"fromHostInterface": "eno2"}}]}}`),
			by:       byWebhook,
			field:    "spec.networkData.links.vlans[id=eth0].id",
			contains: []string{`link id "eth0" is also used by spec.networkData.links.ethernets[id=eth0]`, "link ids must be unique"},
		},
		{
			name:     "reference to an undefined link",
			spec:     withIPv4(`{"id": "prov", "link": "eth9", "ipAddressFromIPPool": "prov-v4"}`),
			by:       byWebhook,
			field:    "spec.networkData.networks.ipv4[id=prov].link",
			contains: []string{`link "eth9" is not defined`, "define a link with that id", "or fix the reference"},
		},
		{
			name:     "invalid MAC string",
			spec:     withNetworkData(`{"links": {"ethernets": [{"type": "phy", "id": "eth0", "macAddress": {"string": "52:54:00:12:34"}}]}}`),
			by:       byWebhook,
			field:    "spec.networkData.links.ethernets[id=eth0].macAddress.string",
			contains: []string{`"52:54:00:12:34" is not a MAC address`, "write six hex pairs separated by : or -"},
		},
		{
			name:     "route prefix 33 on IPv4",
			spec:     withIPv4(`{"id": "prov", "link": "eth0", "ipAddressFromIPPool": "prov-v4", "routes": [{"network": "10.0.0.0", "prefix": 33, "gateway": {"string": "192.0.2.1"}}]}`),
			by:       bySchema,
			field:    "spec.networkData.networks.ipv4[0].routes[0].prefix",
			contains: []string{"should be less than or equal to 32"},
		},
		{
			name:     "route network with host bits set",
			spec:     withIPv4(`{"id": "prov", "link": "eth0", "ipAddressFromIPPool": "prov-v4", "routes": [{"network": "10.0.0.1", "prefix": 8, "gateway": {"string": "192.0.2.1"}}]}`),
			by:       byWebhook,
			field:    "spec.networkData.networks.ipv4[id=prov].routes[0].network",
			contains: []string{`"10.0.0.1" has host bits set for prefix 8`, `use the network address "10.0.0.0", or fix prefix`},
		},
		{
			name:     "MAC fromAnnotation on object machine",
			spec:     withNetworkData(`{"links": {"ethernets": [{"type": "phy", "id": "eth0", "macAddress": {"fromAnnotation": {"object": "machine", "annotation": "mac"}}}]}}`),
			by:       byWebhook,
			field:    "spec.networkData.links.ethernets[id=eth0].macAddress.fromAnnotation.object",
			contains: []string{`"machine" does not exist before provisioning`, "use object baremetalhost", "or macAddress.string"},
		},
		{
			name:     "fromPoolRef to a CAPI IPAM pool",
			spec:     withIPv4(`{"id": "prov", "link": "eth0", "fromPoolRef": {"name": "prov", "apiGroup": "ipam.cluster.x-k8s.io", "kind": "InClusterIPPool"}}`),
			by:       byWebhook,
			field:    "spec.networkData.networks.ipv4[id=prov].fromPoolRef",
			contains: []string{`apiGroup "ipam.cluster.x-k8s.io"`, "only Metal3 IPAM IPPools", "refer to a Metal3 IPPool"},
		},
		{
			name:     "static network without an address source",
			spec:     withIPv4(`{"id": "prov", "link": "eth0"}`),
			by:       byWebhook,
			field:    "spec.networkData.networks.ipv4[id=prov]",
			contains: []string{"has no address source", "set ipAddressFromIPPool, fromPoolRef or fromPoolAnnotation"},
		},
		// Templates CAPM3 cannot provision: it claims no pool for a gateway
		// annotation on a DHCP or SLAAC network.
		{
			name: "route gateway from an annotation on a DHCP network",
			spec: withNetworkData(`{"links": {"ethernets": [` + eth0 + `]}, "networks": {"ipv4DHCP": [{"id": "dhcp", "link": "eth0",
				"routes": [{"network": "10.0.0.0", "prefix": 8, "gateway": {"fromPoolAnnotation": {"object": "baremetalhost", "annotation": "pool.example.com/gw"}}}]}]}}`),
			by:    byWebhook,
			field: "spec.networkData.networks.ipv4DHCP[id=dhcp].routes[0].gateway.fromPoolAnnotation",
			contains: []string{"is not supported on a route of an ipv4DHCP network", "CAPM3 claims no address from that pool there",
				"fails at provisioning", "use fromIPPool, fromPoolRef or string"},
		},
		{
			name: "route gateway from an annotation on a SLAAC network",
			spec: withNetworkData(`{"links": {"ethernets": [` + eth0 + `]}, "networks": {"ipv6SLAAC": [{"id": "slaac", "link": "eth0",
				"routes": [{"network": "::", "gateway": {"fromPoolAnnotation": {"object": "baremetalhost", "annotation": "pool.example.com/gw"}}}]}]}}`),
			by:       byWebhook,
			field:    "spec.networkData.networks.ipv6SLAAC[id=slaac].routes[0].gateway.fromPoolAnnotation",
			contains: []string{"is not supported on a route of an ipv6SLAAC network"},
		},
		// What Ironic's network_data schema requires and CAPM3's schema does not.
		{
			name:     "IPv4 host route, whose netmask Ironic refuses",
			spec:     withIPv4(`{"id": "prov", "link": "eth0", "ipAddressFromIPPool": "prov-v4", "routes": [{"network": "10.0.0.1", "prefix": 32, "gateway": {"string": "192.0.2.1"}}]}`),
			by:       byWebhook,
			field:    "spec.networkData.networks.ipv4[id=prov].routes[0].prefix",
			contains: []string{"32 renders netmask 255.255.255.255, which Ironic's network_data schema refuses"},
		},
		{
			name: "bond without members",
			spec: withNetworkData(`{"links": {"bonds": [{"id": "bond0", "bondMode": "active-backup", "macAddress": {"string": "52:54:00:00:00:02"},
				"parameters": [{"name": "options", "value": {}}]}]}}`),
			by:       byWebhook,
			field:    "spec.networkData.links.bonds[id=bond0].bondLinks",
			contains: []string{"is empty", "Ironic's network_data schema requires bond_links"},
		},
		// Bond parameters.
		{
			name:     "bond parameters for a bond the network data does not have",
			spec:     strings.Replace(bondedSpec, `"bondParameters": {"bond0"`, `"bondParameters": {"bond1"`, 1),
			by:       byWebhook,
			field:    "spec.bondParameters[bond1]",
			contains: []string{`names no bond of spec.networkData.links.bonds (it has "bond0")`},
		},
		{
			name:     "bond parameter the bond's bondXmitHashPolicy sets",
			spec:     strings.Replace(bondedSpec, `"lacp_rate": "fast"`, `"xmit_hash_policy": "encap3+4"`, 1),
			by:       byWebhook,
			field:    "spec.bondParameters[bond0][xmit_hash_policy]",
			contains: []string{"which the bond's bondXmitHashPolicy sets", "set bondXmitHashPolicy on the bond instead"},
		},
		{
			name:     "bond parameter that CAPM3's parameters render too",
			spec:     strings.Replace(bondedSpec, `"lacp_rate": "fast"`, `"options": 1`, 1),
			by:       byWebhook,
			field:    "spec.bondParameters[bond0][options]",
			contains: []string{"would render bond_options", "parameters[options] renders too"},
		},
		{
			// The bonds of a dataTemplateRef are the controller's to check.
			name:     "bond parameter name with its bond_ prefix, with a dataTemplateRef",
			spec:     `{` + selector + `, "dataTemplateRef": {"name": "prov-data"}, "bondParameters": {"bond0": {"bond_miimon": 100}}}`,
			by:       byWebhook,
			field:    "spec.bondParameters[bond0][bond_miimon]",
			contains: []string{"starts with bond_, which rendering adds", `write "miimon"`},
		},
		{
			name:     "bond parameter value with a space",
			spec:     strings.Replace(bondedSpec, `"lacp_rate": "fast"`, `"lacp_rate": "fast miimon=0"`, 1),
			by:       byWebhook,
			field:    "spec.bondParameters[bond0][lacp_rate]",
			contains: []string{`"fast miimon=0" is not a value the network tools can write`},
		},
	}
	c := apiClient(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := c.Create(context.Background(), newTemplate(t, tt.spec))
			requireRejected(t, err, tt.by, tt.field, tt.contains...)
		})
	}
}

func TestEveryProblemIsReportedAtOnce(t *testing.T) {
	spec := `{"hostSelector": {}, "dataTemplateRef": {"name": "prov-data"},
		"networkData": {"links": {"ethernets": [{"type": "phy", "id": "eth0", "macAddress": {"string": "bad"}}]},
			"networks": {"ipv4DHCP": [{"id": "dhcp", "link": "eth1"}]}}}`
	err := apiClient(t).Create(context.Background(), newTemplate(t, spec))
	requireRejected(t, err, byWebhook, "spec.hostSelector")
	for _, field := range []string{
		"spec.dataTemplateRef",
		"spec.networkData.networks.ipv4DHCP[id=dhcp].link",
		"spec.networkData.links.ethernets[id=eth0].macAddress.string",
	} {
		requireRejected(t, err, byWebhook, field)
	}
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

func TestUpdates(t *testing.T) {
	tests := []struct {
		name     string
		change   func(*preprovv1.Metal3PreprovisioningTemplate)
		field    string // empty when the update is valid
		contains []string
	}{
		{
			name:   "a valid change is accepted",
			change: func(m *preprovv1.Metal3PreprovisioningTemplate) { m.Spec.HostSelector.MatchLabels["rack"] = "r2" },
		},
		{
			name: "a MAC typo is rejected",
			change: func(m *preprovv1.Metal3PreprovisioningTemplate) {
				m.Spec.NetworkData.Links.Ethernets[0].MACAddress.FromHostInterface = ""
				m.Spec.NetworkData.Links.Ethernets[0].MACAddress.String = "52:54:00:12:34:5g"
			},
			field:    "spec.networkData.links.ethernets[id=eth0].macAddress.string",
			contains: []string{"is not a MAC address"},
		},
		{
			name:     "emptying the selector is rejected",
			change:   func(m *preprovv1.Metal3PreprovisioningTemplate) { m.Spec.HostSelector = capm3.HostSelector{} },
			field:    "spec.hostSelector",
			contains: []string{"selects every BareMetalHost"},
		},
	}
	c := apiClient(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			template := newTemplate(t, inlineSpec)
			require.NoError(t, c.Create(context.Background(), template))
			created := template.DeepCopy()

			tt.change(template)
			err := c.Update(context.Background(), template)
			got := &preprovv1.Metal3PreprovisioningTemplate{}
			require.NoError(t, c.Get(context.Background(), client.ObjectKeyFromObject(template), got))
			if tt.field == "" {
				require.NoError(t, err)
				assert.Equal(t, template.Spec, got.Spec)
				return
			}
			requireRejected(t, err, byWebhook, tt.field, tt.contains...)
			assert.Equal(t, created.Spec, got.Spec, "a rejected update must change nothing")
		})
	}
}

// requireRejected checks that the API server refused a request as Invalid,
// from the given part, with a cause on field and a message that names the
// field and contains the given parts of the fix.
func requireRejected(t *testing.T, err error, by rejectedBy, field string, contains ...string) {
	t.Helper()
	require.Error(t, err)
	require.True(t, apierrors.IsInvalid(err), "want an Invalid error, got %v", err)
	message := err.Error()
	if by == byWebhook {
		assert.Contains(t, message, deniedByWebhook)
	} else {
		assert.NotContains(t, message, "admission webhook")
	}
	assert.Contains(t, message, field+": ")
	for _, s := range contains {
		assert.Contains(t, message, s)
	}
	var causes []string
	if status, ok := err.(apierrors.APIStatus); ok && status.Status().Details != nil {
		for _, cause := range status.Status().Details.Causes {
			causes = append(causes, cause.Field)
		}
	}
	assert.Contains(t, causes, field, "the status must carry the field for clients")
}

// newTemplate decodes a spec written as in a manifest; unknown fields fail
// the test so that a typo cannot silently drop what a case is about.
func newTemplate(t *testing.T, spec string) *preprovv1.Metal3PreprovisioningTemplate {
	t.Helper()
	template := &preprovv1.Metal3PreprovisioningTemplate{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "m3ppt-", Namespace: "default"},
	}
	decoder := json.NewDecoder(strings.NewReader(spec))
	decoder.DisallowUnknownFields()
	require.NoError(t, decoder.Decode(&template.Spec))
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
