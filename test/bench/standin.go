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

package main

import (
	"context"
	"fmt"
	"os"

	"go.uber.org/zap/zapcore"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/capm3-preprov/capm3-preprov/test/envtest"
	"github.com/capm3-preprov/capm3-preprov/test/ipamstandin"
)

func init() {
	// The harness logs nothing through controller-runtime but errors.
	ctrl.SetLogger(zap.New(zap.Level(zapcore.ErrorLevel)))
}

// startStandIn runs the IPAM stand-in in this process, as the admin, until
// the returned stop function is called.
func startStandIn(ctx context.Context, admin *rest.Config) (stop func(), err error) {
	ctx, cancel := context.WithCancel(ctx)
	done, err := ipamstandin.Start(ctx, admin, envtest.Scheme())
	if err != nil {
		cancel()
		return nil, err
	}
	return func() {
		cancel()
		if err := <-done; err != nil {
			fmt.Fprintln(os.Stderr, "IPAM stand-in:", err)
		}
	}, nil
}
