//go:build e2e

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

package e2e

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"

	"github.com/capm3-preprov/capm3-preprov/test/ipamstandin"
)

// IPAMStandIn runs test/ipamstandin, which plays Metal3 IPAM, in this
// process. Fault specs stop it to hold claims without an address, as a slow
// or unavailable IPAM would.
type IPAMStandIn struct {
	Config *rest.Config
	Scheme *runtime.Scheme

	cancel context.CancelFunc
	done   <-chan error
}

// Start runs the stand-in until Stop.
func (s *IPAMStandIn) Start() error {
	if s.cancel != nil {
		return fmt.Errorf("the IPAM stand-in is already running")
	}
	runCtx, cancel := context.WithCancel(context.Background())
	done, err := ipamstandin.Start(runCtx, s.Config, s.Scheme)
	if err != nil {
		cancel()
		return err
	}
	s.cancel, s.done = cancel, done
	return nil
}

// Running reports whether the stand-in runs.
func (s *IPAMStandIn) Running() bool {
	return s.cancel != nil
}

// Stop stops the stand-in and waits for its reconciles to finish.
func (s *IPAMStandIn) Stop() error {
	if s.cancel == nil {
		return nil
	}
	s.cancel()
	err := <-s.done
	s.cancel = nil
	return err
}
