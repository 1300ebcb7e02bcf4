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

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
)

// The template webhook's rules, called directly as the API server would call
// them (no control plane): apiserver_test.go checks that the API server calls
// them, and what its schema refuses first.

const (
	selector   = `"hostSelector": {"matchLabels": {"rack": "r1"}}`
	eth0       = `{"type": "phy", "id": "eth0", "mtu": 1500, "macAddress": {"fromHostInterface": "eno1"}}`
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
			"ethernets": [` + eth0 + `, {"type": "phy", "id": "eth1", "mtu": 1500, "macAddress": {"string": "52:54:00:00:00:02"}}],
			"bonds": [{"id": "bond0", "mtu": 1500, "bondMode": "802.3ad", "bondXmitHashPolicy": "layer3+4", "bondLinks": ["eth0", "eth1"],
				"macAddress": {"string": "52:54:00:00:00:02"}, "parameters": [{"name": "options", "value": {"miimon": 100}}]}]}},
		"bondParameters": {"bond0": {"miimon": 100, "lacp_rate": "fast"}}}`
)

// withNetworkData is a spec with a valid selector and this networkData.
func withNetworkData(networkData string) string {
	return `{` + selector + `, "networkData": ` + networkData + `}`
}

// withIPv4 is a spec whose networkData has eth0 and this IPv4 network.
func withIPv4(network string) string {
	return withNetworkData(`{"links": {"ethernets": [` + eth0 + `]}, "networks": {"ipv4": [` + network + `]}}`)
}

func TestValidTemplates(t *testing.T) {
	for name, spec := range map[string]string{
		"inline networkData":         inlineSpec,
		"dataTemplateRef":            dataTemplateRefSpec,
		"bond parameters":            bondedSpec,
		"bond parameters with a ref": `{` + selector + `, "dataTemplateRef": {"name": "prov-data"}, "bondParameters": {"bond9": {"miimon": 100}}}`,
		"ramdisk endpoints": `{` + selector + `, "dataTemplateRef": {"name": "prov-data"},
			"ramdiskEndpoints": ["https://192.0.2.2:6385", "http://[2001:db8::2]:6180/images", "192.0.2.3"]}`,
	} {
		t.Run(name, func(t *testing.T) {
			template := newTemplate(t, spec)
			for operation, validate := range validations() {
				warnings, err := validate(template)
				require.NoError(t, err, operation)
				assert.Empty(t, warnings, operation)
			}
		})
	}
}

func TestTemplateRules(t *testing.T) {
	tests := []struct {
		name     string
		spec     string
		field    string
		contains []string
	}{
		{
			name:     "empty host selector",
			spec:     `{"hostSelector": {}, "dataTemplateRef": {"name": "prov-data"}}`,
			field:    "spec.hostSelector",
			contains: []string{"selects every BareMetalHost of the namespace", "set matchLabels or matchExpressions"},
		},
		{
			name:     "invalid selector operator",
			spec:     `{"hostSelector": {"matchExpressions": [{"key": "rack", "operator": "near", "values": ["r1"]}]}, "dataTemplateRef": {"name": "prov-data"}}`,
			field:    "spec.hostSelector.matchExpressions[0].operator",
			contains: []string{`Unsupported value: "near"`, `supported values: `, `"notin"`},
		},
		{
			name:     "invalid selector label key",
			spec:     `{"hostSelector": {"matchLabels": {"rack": "r1", "bad key": "x"}}, "dataTemplateRef": {"name": "prov-data"}}`,
			field:    "spec.hostSelector.matchLabels[bad key]",
			contains: []string{`Invalid value: "bad key"`, "must consist of alphanumeric characters"},
		},
		{
			name:     "both networkData and dataTemplateRef",
			spec:     `{` + selector + `, "dataTemplateRef": {"name": "prov-data"}, "networkData": {"links": {"ethernets": [` + eth0 + `]}}}`,
			field:    "spec.dataTemplateRef",
			contains: []string{"spec.networkData is set too", "keep exactly one of spec.networkData", "and spec.dataTemplateRef"},
		},
		{
			name:     "neither networkData nor dataTemplateRef",
			spec:     `{` + selector + `}`,
			field:    "spec",
			contains: []string{"set exactly one of spec.networkData", "and spec.dataTemplateRef"},
		},
		{
			name:     "dataTemplateRef without a name",
			spec:     `{` + selector + `, "dataTemplateRef": {}}`,
			field:    "spec.dataTemplateRef.name",
			contains: []string{"name the Metal3DataTemplate"},
		},
		{
			// The same id twice in one list is a schema error (list-map key).
			name: "duplicate link id across link types",
			spec: withNetworkData(`{"links": {"ethernets": [` + eth0 + `, {"type": "phy", "id": "eth1", "mtu": 1500, "macAddress": {"fromHostInterface": "eno2"}}],
				"vlans": [{"id": "eth0", "mtu": 1500, "vlanID": 10, "vlanLink": "eth1", "macAddress": {"fromHostInterface": "eno2"}}]}}`),
			field:    "spec.networkData.links.vlans[id=eth0].id",
			contains: []string{`link id "eth0" is also used by spec.networkData.links.ethernets[id=eth0]`, "link ids must be unique"},
		},
		{
			name:     "reference to an undefined link",
			spec:     withIPv4(`{"id": "prov", "link": "eth9", "ipAddressFromIPPool": "prov-v4"}`),
			field:    "spec.networkData.networks.ipv4[id=prov].link",
			contains: []string{`link "eth9" is not defined`, "define a link with that id", "or fix the reference"},
		},
		{
			name:     "invalid MAC string",
			spec:     withNetworkData(`{"links": {"ethernets": [{"type": "phy", "id": "eth0", "mtu": 1500, "macAddress": {"string": "52:54:00:12:34"}}]}}`),
			field:    "spec.networkData.links.ethernets[id=eth0].macAddress.string",
			contains: []string{`"52:54:00:12:34" is not a MAC address`, "write six hex pairs separated by : or -"},
		},
		{
			name:     "route network with host bits set",
			spec:     withIPv4(`{"id": "prov", "link": "eth0", "ipAddressFromIPPool": "prov-v4", "routes": [{"network": "10.0.0.1", "prefix": 8, "gateway": {"string": "192.0.2.1"}}]}`),
			field:    "spec.networkData.networks.ipv4[id=prov].routes[0].network",
			contains: []string{`"10.0.0.1" has host bits set for prefix 8`, `use the network address "10.0.0.0", or fix prefix`},
		},
		{
			name:     "MAC fromAnnotation on object machine",
			spec:     withNetworkData(`{"links": {"ethernets": [{"type": "phy", "id": "eth0", "mtu": 1500, "macAddress": {"fromAnnotation": {"object": "machine", "annotation": "mac"}}}]}}`),
			field:    "spec.networkData.links.ethernets[id=eth0].macAddress.fromAnnotation.object",
			contains: []string{`"machine" does not exist before provisioning`, "use object baremetalhost", "or macAddress.string"},
		},
		{
			name:     "fromPoolRef to a pool of an API group that is no IPAM",
			spec:     withIPv4(`{"id": "prov", "link": "eth0", "fromPoolRef": {"name": "prov", "apiGroup": "ipam.example.com", "kind": "ExamplePool"}}`),
			field:    "spec.networkData.networks.ipv4[id=prov].fromPoolRef",
			contains: []string{`apiGroup "ipam.example.com"`, "Metal3 IPAM", "Cluster API IPAM provider"},
		},
		{
			name:     "fromPoolRef to a Cluster API IPAM prefix pool",
			spec:     withIPv4(`{"id": "prov", "link": "eth0", "fromPoolRef": {"name": "prov", "apiGroup": "ipam.cluster.x-k8s.io", "kind": "InClusterPrefixPool"}}`),
			field:    "spec.networkData.networks.ipv4[id=prov].fromPoolRef",
			contains: []string{`kind "InClusterPrefixPool" of apiGroup ipam.cluster.x-k8s.io, a pool of delegated prefixes`, "such as InClusterIPPool"},
		},
		{
			name:     "static network without an address source",
			spec:     withIPv4(`{"id": "prov", "link": "eth0"}`),
			field:    "spec.networkData.networks.ipv4[id=prov]",
			contains: []string{"has no address source", "set ipAddressFromIPPool, fromPoolRef or fromPoolAnnotation"},
		},
		// Templates CAPM3 cannot provision: it claims no pool for a gateway
		// annotation on a DHCP or SLAAC network.
		{
			name: "route gateway from an annotation on a DHCP network",
			spec: withNetworkData(`{"links": {"ethernets": [` + eth0 + `]}, "networks": {"ipv4DHCP": [{"id": "dhcp", "link": "eth0",
				"routes": [{"network": "10.0.0.0", "prefix": 8, "gateway": {"fromPoolAnnotation": {"object": "baremetalhost", "annotation": "pool.example.com/gw"}}}]}]}}`),
			field: "spec.networkData.networks.ipv4DHCP[id=dhcp].routes[0].gateway.fromPoolAnnotation",
			contains: []string{"is not supported on a route of an ipv4DHCP network", "CAPM3 claims no address from that pool there",
				"fails at provisioning", "use fromIPPool, fromPoolRef or string"},
		},
		{
			name: "route gateway from an annotation on a SLAAC network",
			spec: withNetworkData(`{"links": {"ethernets": [` + eth0 + `]}, "networks": {"ipv6SLAAC": [{"id": "slaac", "link": "eth0",
				"routes": [{"network": "::", "gateway": {"fromPoolAnnotation": {"object": "baremetalhost", "annotation": "pool.example.com/gw"}}}]}]}}`),
			field:    "spec.networkData.networks.ipv6SLAAC[id=slaac].routes[0].gateway.fromPoolAnnotation",
			contains: []string{"is not supported on a route of an ipv6SLAAC network"},
		},
		// What Ironic's network_data schema requires and CAPM3's schema does not.
		{
			name:     "IPv4 host route, whose netmask Ironic refuses",
			spec:     withIPv4(`{"id": "prov", "link": "eth0", "ipAddressFromIPPool": "prov-v4", "routes": [{"network": "10.0.0.1", "prefix": 32, "gateway": {"string": "192.0.2.1"}}]}`),
			field:    "spec.networkData.networks.ipv4[id=prov].routes[0].prefix",
			contains: []string{"32 renders netmask 255.255.255.255, which Ironic's network_data schema refuses"},
		},
		{
			name: "bond without members",
			spec: withNetworkData(`{"links": {"bonds": [{"id": "bond0", "mtu": 1500, "bondMode": "active-backup", "macAddress": {"string": "52:54:00:00:00:02"},
				"parameters": [{"name": "options", "value": {}}]}]}}`),
			field:    "spec.networkData.links.bonds[id=bond0].bondLinks",
			contains: []string{"is empty", "Ironic's network_data schema requires bond_links"},
		},
		// Ramdisk endpoints.
		{
			name:     "ramdisk endpoint with a host name",
			spec:     `{` + selector + `, "dataTemplateRef": {"name": "prov-data"}, "ramdiskEndpoints": ["192.0.2.2", "https://ironic.example.com:6385"]}`,
			field:    "spec.ramdiskEndpoints[1]",
			contains: []string{`"https://ironic.example.com:6385" names no IP address`, "a host name is not taken"},
		},
		{
			name:     "ramdisk endpoint on loopback",
			spec:     `{` + selector + `, "dataTemplateRef": {"name": "prov-data"}, "ramdiskEndpoints": ["http://127.0.0.1:6385/v1/"]}`,
			field:    "spec.ramdiskEndpoints[0]",
			contains: []string{"loopback", "IRONIC_EXTERNAL_CALLBACK_URL"},
		},
		// Bond parameters.
		{
			name:     "bond parameters for a bond the network data does not have",
			spec:     strings.Replace(bondedSpec, `"bondParameters": {"bond0"`, `"bondParameters": {"bond1"`, 1),
			field:    "spec.bondParameters[bond1]",
			contains: []string{`names no bond of spec.networkData.links.bonds (it has "bond0")`},
		},
		{
			name:     "bond parameter the bond's bondXmitHashPolicy sets",
			spec:     strings.Replace(bondedSpec, `"lacp_rate": "fast"`, `"xmit_hash_policy": "encap3+4"`, 1),
			field:    "spec.bondParameters[bond0][xmit_hash_policy]",
			contains: []string{"which the bond's bondXmitHashPolicy sets", "set bondXmitHashPolicy on the bond instead"},
		},
		{
			name:     "bond parameter that CAPM3's parameters render too",
			spec:     strings.Replace(bondedSpec, `"lacp_rate": "fast"`, `"options": 1`, 1),
			field:    "spec.bondParameters[bond0][options]",
			contains: []string{"would render bond_options", "parameters[options] renders too"},
		},
		{
			// The bonds of a dataTemplateRef are the controller's to check.
			name:     "bond parameter name with its bond_ prefix, with a dataTemplateRef",
			spec:     `{` + selector + `, "dataTemplateRef": {"name": "prov-data"}, "bondParameters": {"bond0": {"bond_miimon": 100}}}`,
			field:    "spec.bondParameters[bond0][bond_miimon]",
			contains: []string{"starts with bond_, which rendering adds", `write "miimon"`},
		},
		{
			name:     "bond parameter value with a space",
			spec:     strings.Replace(bondedSpec, `"lacp_rate": "fast"`, `"lacp_rate": "fast miimon=0"`, 1),
			field:    "spec.bondParameters[bond0][lacp_rate]",
			contains: []string{`"fast miimon=0" is not a value the network tools can write`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			template := newTemplate(t, tt.spec)
			for operation, validate := range validations() {
				_, err := validate(template)
				requireInvalid(t, err, tt.field, tt.contains...)
				assert.Equal(t, []string{tt.field}, causeFields(err), "%s: the case's problem, and only it", operation)
				assert.True(t, strings.HasPrefix(err.Error(), `Metal3PreprovisioningTemplate.infrastructure.cluster.x-k8s.io "rack-r1" is invalid: `),
					"%s: the error names the template: %v", operation, err)
			}
		})
	}
}

func TestEveryProblemIsReportedAtOnce(t *testing.T) {
	spec := `{"hostSelector": {}, "dataTemplateRef": {"name": "prov-data"},
		"networkData": {"links": {"ethernets": [{"type": "phy", "id": "eth0", "mtu": 1500, "macAddress": {"string": "bad"}}]},
			"networks": {"ipv4DHCP": [{"id": "dhcp", "link": "eth1"}]}}}`
	_, err := templateValidator{}.ValidateCreate(context.Background(), newTemplate(t, spec))
	for _, field := range []string{
		"spec.hostSelector",
		"spec.dataTemplateRef",
		"spec.networkData.networks.ipv4DHCP[id=dhcp].link",
		"spec.networkData.links.ethernets[id=eth0].macAddress.string",
	} {
		requireInvalid(t, err, field)
	}
}

func TestProvisionedHostPolicyDefault(t *testing.T) {
	for policy, want := range map[preprovv1.ProvisionedHostPolicy]preprovv1.ProvisionedHostPolicy{
		// What templating tools render for an unset value.
		"":                                   preprovv1.ProvisionedHostReportDrift,
		preprovv1.ProvisionedHostUpdate:      preprovv1.ProvisionedHostUpdate,
		preprovv1.ProvisionedHostReportDrift: preprovv1.ProvisionedHostReportDrift,
	} {
		template := newTemplate(t, dataTemplateRefSpec)
		template.Spec.ProvisionedHostPolicy = policy
		require.NoError(t, templateDefaulter{}.Default(context.Background(), template))
		assert.Equal(t, want, template.Spec.ProvisionedHostPolicy, "policy %q", policy)
	}
}

// validations calls the validator as the API server does on a create and on
// an update (from a valid template), which apply the same rules.
func validations() map[string]func(*preprovv1.Metal3PreprovisioningTemplate) (admission.Warnings, error) {
	ctx := context.Background()
	validator := templateValidator{}
	return map[string]func(*preprovv1.Metal3PreprovisioningTemplate) (admission.Warnings, error){
		"create": func(template *preprovv1.Metal3PreprovisioningTemplate) (admission.Warnings, error) {
			return validator.ValidateCreate(ctx, template)
		},
		"update": func(template *preprovv1.Metal3PreprovisioningTemplate) (admission.Warnings, error) {
			old := template.DeepCopy()
			old.Spec.HostSelector.MatchLabels = map[string]string{"rack": "r0"}
			return validator.ValidateUpdate(ctx, old, template)
		},
	}
}

// requireInvalid checks that err is an Invalid error with a cause on field,
// which clients read, and a message that names the field and contains the
// given parts of the fix.
func requireInvalid(t *testing.T, err error, field string, contains ...string) {
	t.Helper()
	require.Error(t, err)
	require.True(t, apierrors.IsInvalid(err), "want an Invalid error, got %v", err)
	message := err.Error()
	assert.Contains(t, message, field+": ")
	for _, s := range contains {
		assert.Contains(t, message, s)
	}
	assert.Contains(t, causeFields(err), field, "the status must carry the field for clients")
}

// causeFields are the fields of the causes of an API error.
func causeFields(err error) []string {
	var fields []string
	if status, ok := err.(apierrors.APIStatus); ok && status.Status().Details != nil {
		for _, cause := range status.Status().Details.Causes {
			fields = append(fields, cause.Field)
		}
	}
	return fields
}

// newTemplate decodes a spec written as in a manifest; unknown fields fail
// the test so that a typo cannot silently drop what a case is about.
func newTemplate(t *testing.T, spec string) *preprovv1.Metal3PreprovisioningTemplate {
	t.Helper()
	template := &preprovv1.Metal3PreprovisioningTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: "rack-r1", Namespace: "default"},
	}
	decoder := json.NewDecoder(strings.NewReader(spec))
	decoder.DisallowUnknownFields()
	require.NoError(t, decoder.Decode(&template.Spec))
	return template
}
