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

// kubectl-preprov is the kubectl plugin of capm3-preprov: with the binary
// on the PATH, `kubectl preprov render` and `kubectl preprov explain`.
package main

import (
	"context"
	"os"
	"os/signal"

	"github.com/capm3-preprov/capm3-preprov/cmd/kubectl-preprov/plugin"
)

func main() {
	os.Exit(run())
}

// run runs the command and returns the exit status: 1 on an error, which
// the command has printed.
func run() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := plugin.NewCommand(os.Stdout, os.Stderr).ExecuteContext(ctx); err != nil {
		return 1
	}
	return 0
}
