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

package redfishbmc

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The calls Ironic's Redfish driver makes, in the order of an inspection;
// test/consumers/ironic runs them through the real Ironic.
func TestTheBMCAnswersIronicsCalls(t *testing.T) {
	t.Parallel()
	bmc, err := Start(t.TempDir())
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, bmc.Stop()) })
	address := bmc.AddHost("worker-0")
	assert.Equal(t, "redfish-virtualmedia+"+bmc.URL+"/redfish/v1/Systems/worker-0", address)

	root := get(t, bmc.URL+"/redfish/v1/")
	assert.Equal(t, "/redfish/v1/Systems", root["Systems"].(map[string]any)["@odata.id"])
	system := get(t, bmc.URL+"/redfish/v1/Systems/worker-0")
	assert.Equal(t, "Off", system["PowerState"])
	assert.Equal(t, []any{map[string]any{"@odata.id": "/redfish/v1/Managers/worker-0"}}, system["Links"].(map[string]any)["ManagedBy"])

	send(t, http.MethodPost, bmc.URL+"/redfish/v1/Systems/worker-0/Actions/ComputerSystem.Reset", `{"ResetType":"On"}`, http.StatusNoContent)
	send(t, http.MethodPatch, bmc.URL+"/redfish/v1/Systems/worker-0", `{"Boot":{"BootSourceOverrideTarget":"Cd","BootSourceOverrideEnabled":"Once"}}`, http.StatusNoContent)
	send(t, http.MethodPost, bmc.URL+"/redfish/v1/Systems/worker-0/Actions/ComputerSystem.Reset", `{"ResetType":"Explode"}`, http.StatusBadRequest)
	host, _ := bmc.Host("worker-0")
	assert.Equal(t, Host{PowerState: "On", BootTarget: "Cd", BootEnabled: "Once", BootMode: "Legacy"}, host)

	cd := get(t, bmc.URL+"/redfish/v1/Managers/worker-0/VirtualMedia/Cd")
	assert.Equal(t, false, cd["Inserted"])
	send(t, http.MethodPost, bmc.URL+"/redfish/v1/Managers/worker-0/VirtualMedia/Cd/Actions/VirtualMedia.InsertMedia",
		`{"Image":"`+bmc.URL+`/nowhere.iso","Inserted":true,"WriteProtected":true}`, http.StatusNoContent)
	host, _ = bmc.Host("worker-0")
	require.NotNil(t, host.Media)
	require.ErrorContains(t, host.Media.Err, "HTTP 404", "an image the BMC cannot fetch is recorded, for the test to report")
	assert.Equal(t, true, get(t, bmc.URL+"/redfish/v1/Managers/worker-0/VirtualMedia/Cd")["Inserted"])
	send(t, http.MethodPost, bmc.URL+"/redfish/v1/Managers/worker-0/VirtualMedia/Cd/Actions/VirtualMedia.EjectMedia", `{}`, http.StatusNoContent)
	host, _ = bmc.Host("worker-0")
	assert.Nil(t, host.Media)

	send(t, http.MethodGet, bmc.URL+"/redfish/v1/Systems/worker-9", "", http.StatusNotFound)
}

func TestTheKernelCommandLineIsTheAppendLine(t *testing.T) {
	t.Parallel()
	params := appendParams("default boot\n\nlabel boot\nkernel /vmlinuz\nappend initrd=/initrd text ipa-api-url=http://172.22.0.2:6385 boot_method=vmedia --\n")
	assert.Equal(t, map[string]string{"initrd": "/initrd", "text": "", "ipa-api-url": "http://172.22.0.2:6385", "boot_method": "vmedia", "--": ""}, params)
}

func get(t *testing.T, url string) map[string]any {
	t.Helper()
	response, err := http.Get(url) //nolint:noctx // a test's request
	require.NoError(t, err)
	defer func() { _ = response.Body.Close() }()
	require.Equal(t, http.StatusOK, response.StatusCode, url)
	var body map[string]any
	require.NoError(t, json.NewDecoder(response.Body).Decode(&body))
	return body
}

func send(t *testing.T, method, url, body string, status int) {
	t.Helper()
	request, err := http.NewRequestWithContext(t.Context(), method, url, strings.NewReader(body))
	require.NoError(t, err)
	response, err := http.DefaultClient.Do(request)
	require.NoError(t, err)
	_ = response.Body.Close()
	assert.Equal(t, status, response.StatusCode, "%s %s", method, url)
}
