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

package framework

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReadAuditLog(t *testing.T) {
	complete := `{"stage":"ResponseComplete","verb":"create","user":{"username":"manager"},` +
		`"objectRef":{"resource":"ipclaims","namespace":"metal3","name":"node-0-provisioning"},"responseStatus":{"code":201},` +
		`"requestReceivedTimestamp":"2026-11-30T00:00:00.000000Z"}` + "\n"
	tests := []struct {
		name    string
		log     string
		want    int
		wantErr bool
	}{
		{name: "empty", log: ""},
		{name: "complete lines", log: complete + complete, want: 2},
		{name: "a last line still being written is left for later", log: complete + `{"stage":"Respo`, want: 1},
		{name: "a broken line before the last is an error", log: "not json\n" + complete, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "audit.log")
			require.NoError(t, os.WriteFile(path, []byte(tt.log), 0o600))
			events, err := ReadAuditLog(path)
			if tt.wantErr {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			require.Len(t, events, tt.want)
			if tt.want > 0 {
				assert.Equal(t, "create", events[0].Verb)
				assert.Equal(t, "manager", events[0].User.Username)
				assert.Equal(t, "ipclaims", events[0].Resource())
				assert.Equal(t, 201, events[0].ResponseStatus.Code)
			}
		})
	}
}

func TestIsWriteVerb(t *testing.T) {
	for verb, want := range map[string]bool{
		"create": true, "update": true, "patch": true, "delete": true, "deletecollection": true,
		"get": false, "list": false, "watch": false,
	} {
		assert.Equal(t, want, IsWriteVerb(verb), verb)
	}
}

func TestResource(t *testing.T) {
	for _, tt := range []struct {
		ref  *AuditObjectRef
		want string
	}{
		{ref: nil, want: ""},
		{ref: &AuditObjectRef{Resource: "baremetalhosts"}, want: "baremetalhosts"},
		{ref: &AuditObjectRef{Resource: "metal3preprovisioningtemplates", Subresource: "status"}, want: "metal3preprovisioningtemplates/status"},
	} {
		assert.Equal(t, tt.want, AuditEvent{ObjectRef: tt.ref}.Resource())
	}
}
