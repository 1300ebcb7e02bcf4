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

// Package integration runs the ipam code that works through the API server
// and is not a flow of the controllers: the sweep and the releases, on a
// control plane without the garbage collector, with views of the cache that
// lag the API. The ipam package's own tests are pure and need no control
// plane.
package integration

import (
	"fmt"
	"os"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capm3-preprov/capm3-preprov/test/framework"
)

// The sweep runs here on a control plane WITHOUT the garbage collector: as if
// hosts had been deleted while nothing enforced their owner references, so
// only the sweep can release their claims.
var (
	testEnv   *framework.ControlPlane
	k8sClient client.Client
)

func TestMain(m *testing.M) {
	env, err := framework.StartControlPlane(framework.StartControlPlaneInput{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	testEnv, k8sClient = env, env.Client
	code := m.Run()
	_ = env.Stop()
	os.Exit(code)
}
