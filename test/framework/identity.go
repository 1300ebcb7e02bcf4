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
	"errors"
	"fmt"
	"os"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// AddUser adds an identity with every right (group system:masters) and
// returns its client configuration and kubeconfig, so an audit log tells
// its requests apart from the administrator's.
func (cp *ControlPlane) AddUser(name string) (*rest.Config, []byte, error) {
	user, err := cp.env.AddUser(envtest.User{Name: name, Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("adding user %s: %w", name, err)
	}
	kubeConfig, err := user.KubeConfig()
	if err != nil {
		return nil, nil, err
	}
	return user.Config(), kubeConfig, nil
}

// ServiceAccountUser is the user name the API server gives the tokens of a
// ServiceAccount, the subject RBAC bindings to it name.
func ServiceAccountUser(namespace, name string) string {
	return "system:serviceaccount:" + namespace + ":" + name
}

// ServiceAccountKubeconfig writes a kubeconfig for a ServiceAccount
// identity and returns its path: a client certificate whose user name and
// groups are those the API server gives the ServiceAccount's tokens, so RBAC
// bindings to the ServiceAccount apply.
func (cp *ControlPlane) ServiceAccountKubeconfig(namespace, name string) (string, error) {
	authenticated, err := cp.env.AddUser(envtest.User{
		Name:   ServiceAccountUser(namespace, name),
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"},
	}, nil)
	if err != nil {
		return "", err
	}
	kubeconfig, err := authenticated.KubeConfig()
	if err != nil {
		return "", err
	}
	file, err := os.CreateTemp(cp.dir, "kubeconfig-")
	if err != nil {
		return "", err
	}
	_, err = file.Write(kubeconfig)
	return file.Name(), errors.Join(err, file.Close())
}
