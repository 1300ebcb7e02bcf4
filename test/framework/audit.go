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
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"time"
)

// AuditEvent is the part of an audit.k8s.io/v1 Event the tests read: the
// kube-apiserver's audit log (one JSON object a line) is how the e2e
// suite, the clusterctl tests and the benchmark see every request the
// manager makes.
type AuditEvent struct {
	Stage      string `json:"stage"`
	Verb       string `json:"verb"`
	RequestURI string `json:"requestURI"`
	User       struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef      *AuditObjectRef `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	RequestReceived time.Time `json:"requestReceivedTimestamp"`
}

// AuditObjectRef is the object a request is about.
type AuditObjectRef struct {
	Resource    string `json:"resource"`
	Subresource string `json:"subresource"`
	Namespace   string `json:"namespace"`
	Name        string `json:"name"`
}

// Resource is the resource the request is about with its subresource, as
// "baremetalhosts" or "metal3preprovisioningtemplates/status"; "" when it is
// about no object.
func (e AuditEvent) Resource() string {
	if e.ObjectRef == nil {
		return ""
	}
	if e.ObjectRef.Subresource == "" {
		return e.ObjectRef.Resource
	}
	return e.ObjectRef.Resource + "/" + e.ObjectRef.Subresource
}

// IsWriteVerb reports whether a verb changes objects.
func IsWriteVerb(verb string) bool {
	switch verb {
	case "create", "update", "patch", "delete", "deletecollection":
		return true
	}
	return false
}

// ReadAuditLog reads the audit log at path. The API server appends to it while it
// runs: a last line without its end is left for the next read; any other
// line that is not an event is an error.
func ReadAuditLog(path string) ([]AuditEvent, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if end := bytes.LastIndexByte(data, '\n'); end+1 < len(data) {
		data = data[:end+1]
	}
	var events []AuditEvent
	scanner := bufio.NewScanner(bytes.NewReader(data))
	scanner.Buffer(make([]byte, 0, 64*1024), 4*1024*1024)
	for scanner.Scan() {
		var event AuditEvent
		if err := json.Unmarshal(scanner.Bytes(), &event); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		events = append(events, event)
	}
	return events, scanner.Err()
}
