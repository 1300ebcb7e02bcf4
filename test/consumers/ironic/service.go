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
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/capm3-preprov/capm3-preprov/test/framework"
)

// startService runs dbsync to its end, then starts the service (ironic,
// ironic-inspector) in a process group of its own; both write to log.
func startService(ctx context.Context, log *os.File, dbsync []string, command ...string) (*framework.ProcessGroup, error) {
	migrate := exec.CommandContext(ctx, dbsync[0], dbsync[1:]...)
	migrate.Stdout, migrate.Stderr = log, log
	if err := migrate.Run(); err != nil {
		return nil, fmt.Errorf("%s: %w (log: %s)", strings.Join(dbsync, " "), err, log.Name())
	}
	cmd := exec.Command(command[0], command[1:]...) //nolint:noctx // it runs until stop; ctx bounds only the start
	return framework.StartProcessGroup(cmd, log)
}
