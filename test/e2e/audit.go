//go:build e2e

package e2e

import (
	"bufio"
	"encoding/json"
	"net/url"
	"os"
	"time"
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

// auditEvent is the part of an audit.k8s.io/v1 Event the specs read.
type auditEvent struct {
	Stage      string `json:"stage"`
	Verb       string `json:"verb"`
	RequestURI string `json:"requestURI"`
	User       struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	RequestReceived time.Time `json:"requestReceivedTimestamp"`
}

// writeVerbs change objects.
var writeVerbs = map[string]bool{"create": true, "update": true, "patch": true, "delete": true, "deletecollection": true}

// isWrite is a write that reached an object.
func (e auditEvent) isWrite() bool {
	return writeVerbs[e.Verb] && e.ObjectRef != nil
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

// readAuditLog reads the audit log. The API server appends to it while we
// read: a last line without its end is left for the next read.
func readAuditLog(path string) ([]auditEvent, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	var events []auditEvent
	scanner := bufio.NewScanner(file)
	scanner.Buffer(make([]byte, 0, 64*1024), 4*1024*1024)
	for scanner.Scan() {
		var event auditEvent
		if err := json.Unmarshal(scanner.Bytes(), &event); err != nil {
			continue
		}
		events = append(events, event)
	}
	return events, scanner.Err()
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
