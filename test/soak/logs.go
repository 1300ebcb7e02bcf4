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
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/capm3-preprov/capm3-preprov/test/framework"
)

// newLines reads what was appended to a file since the last read, up to
// its last complete line: the logs grow with the run, and each quiet point
// reads only what is new.
type newLines struct {
	path   string
	offset int64
}

func (n *newLines) read() ([]byte, error) {
	file, err := os.Open(n.path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = file.Close() }() // read only
	if _, err = file.Seek(n.offset, io.SeekStart); err != nil {
		return nil, err
	}
	data, err := io.ReadAll(file)
	if err != nil {
		return nil, err
	}
	end := bytes.LastIndexByte(data, '\n')
	if end < 0 {
		return nil, nil
	}
	n.offset += int64(end + 1)
	return data[:end+1], nil
}

// auditReader finds the requests the API server refused with 403 in the
// audit log: with config/rbac's permissions the manager must never be
// denied.
type auditReader struct {
	newLines
}

func (a *auditReader) denials() ([]string, error) {
	data, err := a.read()
	if err != nil {
		return nil, err
	}
	var denied []string
	scanner := bufio.NewScanner(bytes.NewReader(data))
	scanner.Buffer(make([]byte, 0, 64*1024), 4*1024*1024)
	for scanner.Scan() {
		var event framework.AuditEvent
		if err := json.Unmarshal(scanner.Bytes(), &event); err != nil {
			return nil, fmt.Errorf("%s: %w", a.path, err)
		}
		if event.ResponseStatus != nil && event.ResponseStatus.Code == 403 {
			denied = append(denied, fmt.Sprintf("%s %s %s", event.User.Username, event.Verb, event.RequestURI))
		}
	}
	return denied, scanner.Err()
}

// panics finds the lines of the manager's log that tell of a panic (Go's
// own, or one controller-runtime recovered in a reconciler).
func panics(log *newLines) ([]string, error) {
	data, err := log.read()
	if err != nil {
		return nil, err
	}
	var found []string
	for line := range strings.SplitSeq(string(data), "\n") {
		if strings.Contains(strings.ToLower(line), "panic") {
			found = append(found, line)
		}
	}
	return found, nil
}
