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
	"net/url"
	"time"

	"github.com/capm3-preprov/capm3-preprov/test/framework"
)

// auditPolicy records every request of a ServiceAccount identity (the
// managers; the suite, the IPAM stand-in and the garbage collector run as
// administrators and are left out) at level Metadata: who did what to which
// object, with the request URI (and so the label selector), never bodies.
// RequestReceived is omitted: a completed request has a ResponseComplete
// event, a watch also a ResponseStarted one when it starts.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
  userGroups: ["system:serviceaccounts"]
- level: None
`

// auditEvent is an audit log event, with what the specs ask of it.
type auditEvent struct{ framework.AuditEvent }

// isWrite is a write that reached an object.
func (e auditEvent) isWrite() bool {
	return framework.IsWriteVerb(e.Verb) && e.ObjectRef != nil
}

// succeeded is a request the API server did not refuse.
func (e auditEvent) succeeded() bool {
	return e.ResponseStatus != nil && e.ResponseStatus.Code < 300
}

// on is a request on a resource (no subresource).
func (e auditEvent) on(resource string) bool {
	return e.ObjectRef != nil && e.ObjectRef.Resource == resource && e.ObjectRef.Subresource == ""
}

// labelSelector is the labelSelector of the request's query.
func (e auditEvent) labelSelector() string {
	parsed, err := url.Parse(e.RequestURI)
	if err != nil {
		return ""
	}
	return parsed.Query().Get("labelSelector")
}

// readAuditLog reads the audit log while the API server writes it.
func readAuditLog(path string) ([]auditEvent, error) {
	read, err := framework.ReadAuditLog(path)
	if err != nil {
		return nil, err
	}
	events := make([]auditEvent, 0, len(read))
	for _, event := range read {
		events = append(events, auditEvent{event})
	}
	return events, nil
}

// auditFilter selects audit events.
type auditFilter func(auditEvent) bool

func byUser(user string) auditFilter {
	return func(e auditEvent) bool { return e.User.Username == user }
}

func inNamespace(namespace string) auditFilter {
	return func(e auditEvent) bool { return e.ObjectRef != nil && e.ObjectRef.Namespace == namespace }
}

func receivedAfter(t time.Time) auditFilter {
	return func(e auditEvent) bool { return !e.RequestReceived.Before(t) }
}

func writeRequests(e auditEvent) bool { return e.isWrite() }

// selectEvents returns the events every filter passes.
func selectEvents(events []auditEvent, filters ...auditFilter) []auditEvent {
	var selected []auditEvent
	for _, event := range events {
		passes := true
		for _, filter := range filters {
			if !filter(event) {
				passes = false
				break
			}
		}
		if passes {
			selected = append(selected, event)
		}
	}
	return selected
}
