package ironic

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// compiledSchema is the installed schema, compiled once.
var compiledSchema = sync.OnceValues(func() (*jsonschema.Schema, error) {
	data, err := os.ReadFile(SchemaPath)
	if err != nil {
		return nil, err
	}
	document, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	compiler := jsonschema.NewCompiler()
	if err := compiler.AddResource(SchemaPath, document); err != nil {
		return nil, err
	}
	return compiler.Compile(SchemaPath)
})

// explainRefusal adds to a refusal of network data what the installed
// schema finds wrong with it, every failure with its place. Ironic's own
// message names one failure only, often in a branch of a oneOf that was
// never meant: an IPv4 network that lacks network_id is reported as its
// address not matching the IPv6 pattern.
func explainRefusal(err error, networkData map[string]any) error {
	if !InvalidNetworkData(err) {
		return err
	}
	failures, explainErr := schemaFailures(networkData)
	if explainErr != nil {
		return fmt.Errorf("%w\n(the installed schema could not say more: %v)", err, explainErr)
	}
	return fmt.Errorf("%w\nthe installed schema (%s) finds:\n- %s", err, SchemaPath, strings.Join(failures, "\n- "))
}

// schemaFailures validates a document against the installed schema and
// lists the failures. In an anyOf or oneOf over link or network kinds only
// the branches of the instance's own type are followed.
func schemaFailures(networkData map[string]any) ([]string, error) {
	schema, err := compiledSchema()
	if err != nil {
		return nil, err
	}
	data, err := json.Marshal(networkData)
	if err != nil {
		return nil, err
	}
	instance, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	var invalid *jsonschema.ValidationError
	if err := schema.Validate(instance); !errors.As(err, &invalid) {
		return nil, fmt.Errorf("the schema finds nothing wrong (%v)", err)
	}
	printer := message.NewPrinter(language.English)
	var failures []string
	var walk func(*jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		causes := e.Causes
		if alternatives(e) {
			if meant := slices.DeleteFunc(slices.Clone(causes), wrongType); len(meant) > 0 {
				causes = meant
			}
		}
		if len(causes) == 0 {
			failures = append(failures, fmt.Sprintf("/%s: %s", strings.Join(e.InstanceLocation, "/"), e.ErrorKind.LocalizedString(printer)))
		}
		for _, cause := range causes {
			walk(cause)
		}
	}
	walk(invalid)
	return slices.Compact(failures), nil
}

// wrongType says whether a branch failed on the instance's "type": a
// branch for another kind of link or network.
func wrongType(e *jsonschema.ValidationError) bool {
	if n := len(e.InstanceLocation); n > 0 && e.InstanceLocation[n-1] == "type" {
		switch e.ErrorKind.(type) {
		case *kind.Enum, *kind.Const:
			return true
		}
	}
	return slices.ContainsFunc(e.Causes, func(cause *jsonschema.ValidationError) bool {
		return !alternatives(cause) && wrongType(cause)
	})
}

// alternatives says whether an error is an anyOf or a oneOf, whose causes
// are the failures of each branch.
func alternatives(e *jsonschema.ValidationError) bool {
	switch e.ErrorKind.(type) {
	case *kind.AnyOf, *kind.OneOf:
		return true
	}
	return false
}
