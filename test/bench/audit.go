package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"time"
)

// auditPolicy records, for the manager and the floor only, one event per
// request once it completes, with metadata and no bodies: who did what to
// which resource, the response code and when. Watches are left out; gets
// and lists are kept to show what the manager reads past its cache.
var auditPolicy = fmt.Sprintf(`apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived, ResponseStarted]
rules:
- level: Metadata
  users: [%q, %q]
  verbs: [create, update, patch, delete, deletecollection, get, list]
- level: None
`, managerUser, floorUser)

// auditEvent is the part of an audit.k8s.io/v1 Event the harness reads.
type auditEvent struct {
	Verb string `json:"verb"`
	User struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
		Namespace   string `json:"namespace"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	RequestReceived time.Time `json:"requestReceivedTimestamp"`
}

// apiCall is a kind of request: verb, resource (with its subresource) and
// whether the API server refused it.
type apiCall struct {
	Verb     string
	Resource string
	Failed   bool
}

func (c apiCall) write() bool {
	switch c.Verb {
	case "create", "update", "patch", "delete", "deletecollection":
		return true
	}
	return false
}

func (c apiCall) String() string {
	s := c.Verb + " " + c.Resource
	if c.Failed {
		s += " (refused)"
	}
	return s
}

// readAudit reads the audit log.
func readAudit(path string) ([]auditEvent, error) {
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
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		events = append(events, event)
	}
	return events, scanner.Err()
}

// auditWindow selects the requests of one user, in one namespace ("" for
// any) received in [from, to).
type auditWindow struct {
	user      string
	namespace string
	from, to  time.Time
}

// count counts the requests in the window by kind.
func (w auditWindow) count(events []auditEvent) map[apiCall]int {
	counts := map[apiCall]int{}
	for _, event := range events {
		if event.User.Username != w.user || event.ObjectRef == nil ||
			event.RequestReceived.Before(w.from) || !event.RequestReceived.Before(w.to) {
			continue
		}
		if w.namespace != "" && event.ObjectRef.Namespace != w.namespace {
			continue
		}
		resource := event.ObjectRef.Resource
		if event.ObjectRef.Subresource != "" {
			resource += "/" + event.ObjectRef.Subresource
		}
		failed := event.ResponseStatus != nil && event.ResponseStatus.Code >= 300
		counts[apiCall{Verb: event.Verb, Resource: resource, Failed: failed}]++
	}
	return counts
}
