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
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The package's tests share one Ironic 29 from the Debian 13 root, started
// by the first test that needs it (half a minute here) and stopped after
// the last. Without root or the root build they fail, naming
// hack/debian13-root.sh.
var shared struct {
	once    sync.Once
	server  *Server
	err     error
	logs    string
	started time.Duration
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.server != nil {
		if err := shared.server.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "stopping ironic: %v\n", err)
			code = 1
		}
	}
	if shared.logs != "" {
		_ = os.RemoveAll(shared.logs)
	}
	os.Exit(code)
}

// sharedIronic returns the package's Ironic, starting it first; a failed
// test prints the end of its logs.
func sharedIronic(t *testing.T) *Server {
	t.Helper()
	shared.once.Do(func() {
		start := time.Now()
		// Not t.TempDir: the logs outlive the test that started Ironic.
		if shared.logs, shared.err = os.MkdirTemp("", "ironic-test-logs-"); shared.err != nil { //nolint:usetesting // see above
			return
		}
		shared.server, shared.err = Start(context.Background(), Options{LogPath: filepath.Join(shared.logs, "ironic.log")})
		shared.started = time.Since(start)
	})
	require.NoError(t, shared.err)
	t.Logf("Ironic 29 answered %s after it was started, at %s", shared.started.Round(time.Millisecond), shared.server.URL)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the end of %s:\n%s", shared.server.LogPath, FileTail(shared.server.LogPath, 40))
		}
	})
	return shared.server
}
