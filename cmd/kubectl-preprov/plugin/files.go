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

package plugin

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	apiextensionsinternal "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/yaml"

	"github.com/capm3-preprov/capm3-preprov/config/crd"
)

// objectFiles are the objects of YAML files, read as the API server would
// store them: CRD defaults applied, unknown fields refused.
type objectFiles struct {
	scheme   *runtime.Scheme
	decoder  runtime.Decoder
	defaults map[schema.GroupVersionKind]*structuralschema.Structural
	objects  []client.Object
}

func newObjectFiles(scheme *runtime.Scheme) (*objectFiles, error) {
	defaults, err := crdDefaults()
	if err != nil {
		return nil, err
	}
	return &objectFiles{
		scheme:   scheme,
		decoder:  serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDeserializer(),
		defaults: defaults,
	}, nil
}

// crdDefaults returns the structural schema of each version of the embedded
// CRDs, the API server's source of defaults.
func crdDefaults() (map[schema.GroupVersionKind]*structuralschema.Structural, error) {
	schemas := map[schema.GroupVersionKind]*structuralschema.Structural{}
	err := fs.WalkDir(crd.Rendered, ".", func(path string, entry fs.DirEntry, err error) error {
		if err != nil || entry.IsDir() {
			return err
		}
		data, err := crd.Rendered.ReadFile(path)
		if err != nil {
			return err
		}
		definition := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.Unmarshal(data, definition); err != nil {
			return fmt.Errorf("reading the embedded CRD %s: %w", path, err)
		}
		for _, version := range definition.Spec.Versions {
			if version.Schema == nil || version.Schema.OpenAPIV3Schema == nil {
				continue
			}
			internal := &apiextensionsinternal.JSONSchemaProps{}
			if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(version.Schema.OpenAPIV3Schema, internal, nil); err != nil {
				return fmt.Errorf("converting the schema of %s %s: %w", definition.Name, version.Name, err)
			}
			structural, err := structuralschema.NewStructural(internal)
			if err != nil {
				return fmt.Errorf("the schema of %s %s: %w", definition.Name, version.Name, err)
			}
			gvk := schema.GroupVersionKind{Group: definition.Spec.Group, Version: version.Name, Kind: definition.Spec.Names.Kind}
			schemas[gvk] = structural
		}
		return nil
	})
	return schemas, err
}

// Read adds the objects of a file ("-" is standard input), or of the
// .yaml, .yml and .json files of a folder, as kubectl -f does.
func (f *objectFiles) Read(path, namespace string) error {
	if info, err := os.Stat(path); err == nil && info.IsDir() {
		entries, err := os.ReadDir(path)
		if err != nil {
			return err
		}
		for _, entry := range entries {
			if ext := filepath.Ext(entry.Name()); !entry.IsDir() && (ext == ".yaml" || ext == ".yml" || ext == ".json") {
				if err := f.readFile(filepath.Join(path, entry.Name()), namespace); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return f.readFile(path, namespace)
}

// readFile adds the objects of one file that the scheme knows. Kinds it
// does not know are skipped: manifests also hold what else goes with the
// hosts.
func (f *objectFiles) readFile(path, namespace string) error {
	var in io.Reader = os.Stdin
	if path != "-" {
		file, err := os.Open(path) //nolint:gosec // the user names the files to read
		if err != nil {
			return err
		}
		defer func() { _ = file.Close() }() // read only: nothing to lose
		in = file
	}
	reader := utilyaml.NewYAMLReader(bufio.NewReader(in))
	for index := 0; ; index++ {
		document, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if err := f.add(document, namespace); err != nil {
			return fmt.Errorf("%s, document %d: %w", path, index+1, err)
		}
	}
}

func (f *objectFiles) add(document []byte, namespace string) error {
	raw := map[string]any{}
	if err := yaml.Unmarshal(document, &raw); err != nil {
		return err
	}
	if len(raw) == 0 {
		return nil
	}
	apiVersion, _ := raw["apiVersion"].(string)
	kind, _ := raw["kind"].(string)
	if apiVersion == "" || kind == "" {
		return errors.New("not a Kubernetes object: apiVersion and kind are required")
	}
	gvk := schema.FromAPIVersionAndKind(apiVersion, kind)
	if !f.scheme.Recognizes(gvk) {
		if versions := f.scheme.VersionsForGroupKind(gvk.GroupKind()); len(versions) > 0 {
			return fmt.Errorf("%s %s: write it as %s, the version the controller reads", kind, apiVersion, versions[0])
		}
		return nil
	}
	if structural := f.defaults[gvk]; structural != nil {
		structuraldefaulting.Default(raw, structural)
	}
	defaulted, err := json.Marshal(raw)
	if err != nil {
		return err
	}
	decoded, _, err := f.decoder.Decode(defaulted, nil, nil)
	if err != nil {
		return fmt.Errorf("%s: %w", kind, err)
	}
	obj, ok := decoded.(client.Object)
	if !ok {
		return nil
	}
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	if obj.GetName() == "" {
		return fmt.Errorf("%s: metadata.name is required", kind)
	}
	if obj.GetNamespace() == "" {
		obj.SetNamespace(namespace)
	}
	f.objects = append(f.objects, obj)
	return nil
}

// Get finds an object of the files, as a client.Reader.
func (f *objectFiles) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	gvk, err := apiutil.GVKForObject(obj, f.scheme)
	if err != nil {
		return err
	}
	for _, candidate := range f.objects {
		if candidate.GetObjectKind().GroupVersionKind() == gvk && client.ObjectKeyFromObject(candidate) == key {
			reflect.ValueOf(obj).Elem().Set(reflect.ValueOf(candidate.DeepCopyObject()).Elem())
			return nil
		}
	}
	return apierrors.NewNotFound(schema.GroupResource{Group: gvk.Group, Resource: gvk.Kind}, key.Name)
}

// List lists the objects of the files, as a client.Reader; only the
// namespace and label selector options apply.
func (f *objectFiles) List(_ context.Context, list client.ObjectList, opts ...client.ListOption) error {
	listGVK, err := apiutil.GVKForObject(list, f.scheme)
	if err != nil {
		return err
	}
	gvk := listGVK.GroupVersion().WithKind(strings.TrimSuffix(listGVK.Kind, "List"))
	options := (&client.ListOptions{}).ApplyOptions(opts)
	var items []runtime.Object
	for _, candidate := range f.objects {
		if candidate.GetObjectKind().GroupVersionKind() != gvk ||
			(options.Namespace != "" && candidate.GetNamespace() != options.Namespace) {
			continue
		}
		if options.LabelSelector != nil && !options.LabelSelector.Matches(labels.Set(candidate.GetLabels())) {
			continue
		}
		items = append(items, candidate.DeepCopyObject())
	}
	return meta.SetList(list, items)
}

// ofKind returns the objects of the files of one kind.
func (f *objectFiles) ofKind(kind string) []client.Object {
	var objects []client.Object
	for _, obj := range f.objects {
		if obj.GetObjectKind().GroupVersionKind().Kind == kind {
			objects = append(objects, obj)
		}
	}
	return objects
}
