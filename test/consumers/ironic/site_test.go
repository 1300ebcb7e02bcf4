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

package ironic

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestKernelCommandLine(t *testing.T) {
	tests := []struct {
		name   string
		params map[string]string
		want   string
	}{
		{
			name:   "parameters by name, flags without a value",
			params: map[string]string{"ipa-api-url": "http://172.22.0.2:6385", "nofb": "", "boot_method": "vmedia"},
			want:   "boot_method=vmedia ipa-api-url=http://172.22.0.2:6385 nofb",
		},
		{
			name:   "a value holding = stays whole",
			params: map[string]string{"ipa-agent-token": "a=b"},
			want:   "ipa-agent-token=a=b",
		},
		{name: "none", params: map[string]string{}, want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, KernelCommandLine(tt.params))
		})
	}
}
