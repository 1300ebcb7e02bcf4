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

package networkdata

import (
	"bytes"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/require"

	"github.com/capm3-preprov/capm3-preprov/test/consumers/networkdataschema"
)

// requireValidForIronic fails the test unless doc is valid under Ironic's
// network_data schema, which its API validates a node's network_data against
// (HTTP 400 "Invalid network_data" otherwise), read from the installed
// python3-ironic package as Ironic 29 has it, bond mode 802.3ad (networkdataschema.SchemaWith8023ad
// says why). It never skips: without the package it fails and names
// hack/install-packages.sh.
func requireValidForIronic(t require.TestingT, doc []byte) {
	if h, ok := t.(interface{ Helper() }); ok {
		h.Helper()
	}
	schema, err := networkdataschema.SchemaWith8023ad()
	require.NoError(t, err)
	instance, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	require.NoError(t, err)
	require.NoError(t, schema.Validate(instance), "Ironic's API would refuse this network_data: %s", doc)
}
