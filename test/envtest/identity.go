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

package envtest

import (
	"fmt"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// WithAuditLog makes the API server record requests under the audit policy
// in policyFile (an audit.k8s.io/v1 Policy) into logFile, one JSON event a
// line (test/audit reads them). Blocking mode: an event is written before
// its request returns, so a test that waited on an object sees its writes.
func WithAuditLog(policyFile, logFile string) Option {
	return func(env *envtest.Environment) {
		env.ControlPlane.GetAPIServer().Configure().
			Set("audit-policy-file", policyFile).
			Set("audit-log-path", logFile).
			Set("audit-log-format", "json").
			Set("audit-log-mode", "blocking")
	}
}

// AddUser adds an identity with every right (group system:masters) and
// returns its client configuration and kubeconfig, so an audit log tells
// its requests apart from the administrator's.
func (e *Environment) AddUser(name string) (*rest.Config, []byte, error) {
	user, err := e.env.AddUser(envtest.User{Name: name, Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("adding user %s: %w", name, err)
	}
	kubeConfig, err := user.KubeConfig()
	if err != nil {
		return nil, nil, err
	}
	return user.Config(), kubeConfig, nil
}
