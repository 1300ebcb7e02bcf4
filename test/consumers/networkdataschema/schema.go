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

// Package networkdataschema is Ironic's network_data JSON schema as the
// installed ironic-api package has it: a leaf that reads a file and starts
// no process, so pure packages test what they render against it.
package networkdataschema

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

// Path is the network_data JSON schema Ironic's API validates against,
// as the ironic-api package installs it.
const Path = "/usr/lib/python3/dist-packages/ironic/api/controllers/v1/network-data-schema.json"

// InstallHint says how to get the packages the tests need.
const InstallHint = "install the Debian packages the tests need with hack/install-packages.sh (as root, or with sudo)"

// compiledSchema is the installed schema as Ironic has it, compiled once.
var compiledSchema = sync.OnceValues(func() (*jsonschema.Schema, error) {
	document, err := readSchema()
	if err != nil {
		return nil, err
	}
	return compileSchema(document)
})

// SchemaWith8023ad is the installed schema with bond mode 802.3ad added to
// its bond modes, and nothing else changed, compiled once. Ironic 21.4's
// schema (Debian's) lists "802.1ad", which is VLAN stacking, not a bond
// mode, where CAPM3, Linux, cloud-init and glean all say "802.3ad"; we
// render CAPM3's 802.3ad as it is. So Ironic 21.4's API refuses any bond in
// 802.3ad mode, and only an Ironic whose schema says 802.3ad accepts it
// (docs/network-data.md). Tests of what we render check every other rule as
// the installed schema has it.
var SchemaWith8023ad = sync.OnceValues(func() (*jsonschema.Schema, error) {
	document, err := readSchema()
	if err != nil {
		return nil, err
	}
	if err := allow8023ad(document); err != nil {
		return nil, fmt.Errorf("%s: %w", Path, err)
	}
	return compileSchema(document)
})

func readSchema() (any, error) {
	data, err := os.ReadFile(Path)
	if err != nil {
		return nil, fmt.Errorf("ironic's network_data schema: %w: %s", err, InstallHint)
	}
	document, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", Path, err)
	}
	return document, nil
}

func compileSchema(document any) (*jsonschema.Schema, error) {
	compiler := jsonschema.NewCompiler()
	if err := compiler.AddResource(Path, document); err != nil {
		return nil, err
	}
	return compiler.Compile(Path)
}

// allow8023ad adds 802.3ad to the bond modes of a schema document that
// lists 802.1ad or 802.3ad, and fails on any other shape.
func allow8023ad(document any) error {
	bondMode := document
	for _, key := range []string{"definitions", "l2_bond", "properties", "bond_mode"} {
		object, ok := bondMode.(map[string]any)
		if !ok {
			return fmt.Errorf("no object at %s; look again at how the tests handle 802.3ad", key)
		}
		bondMode = object[key]
	}
	object, ok := bondMode.(map[string]any)
	if !ok {
		return errors.New("bond_mode is not an object; look again at how the tests handle 802.3ad")
	}
	enum, ok := object["enum"].([]any)
	if !ok || !slices.Contains(enum, any("802.1ad")) && !slices.Contains(enum, any("802.3ad")) {
		return fmt.Errorf("unexpected bond modes %v; look again at how the tests handle 802.3ad", object["enum"])
	}
	if !slices.Contains(enum, any("802.3ad")) {
		object["enum"] = append(enum, "802.3ad")
	}
	return nil
}

// Failures validates a document against the installed schema and
// lists the failures. In an anyOf or oneOf over link or network kinds only
// the branches of the instance's own type are followed.
func Failures(networkData map[string]any) ([]string, error) {
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
	err = schema.Validate(instance)
	if err == nil {
		return nil, errors.New("the schema finds nothing wrong")
	}
	if !errors.As(err, &invalid) {
		return nil, fmt.Errorf("validating against the schema: %w", err)
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
