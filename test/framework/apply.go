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
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ApplyFiles creates the objects of YAML files (several documents each), in
// the order of the paths; a folder stands for its *.yaml files, sorted. It is
// how the demo and the tests install examples, the way kubectl apply would.
func ApplyFiles(ctx context.Context, c client.Client, paths ...string) ([]*unstructured.Unstructured, error) {
	return applyFiles(ctx, c, "", paths)
}

// ApplyFilesInNamespace is ApplyFiles with every namespaced object created in
// namespace instead of the one its file names, so a test can install an
// example written for the demo's namespace into a namespace of its own.
// Cluster-scoped objects are created as they are.
func ApplyFilesInNamespace(ctx context.Context, c client.Client, namespace string, paths ...string) ([]*unstructured.Unstructured, error) {
	if namespace == "" {
		return nil, errors.New("ApplyFilesInNamespace needs a namespace")
	}
	return applyFiles(ctx, c, namespace, paths)
}

// applyFiles creates the objects of paths; a non-empty namespace overrides
// the namespace of namespaced objects.
func applyFiles(ctx context.Context, c client.Client, namespace string, paths []string) ([]*unstructured.Unstructured, error) {
	var created []*unstructured.Unstructured
	for _, path := range paths {
		files, err := yamlFiles(path)
		if err != nil {
			return created, err
		}
		for _, file := range files {
			objects, err := ReadObjects(file)
			if err != nil {
				return created, err
			}
			for _, obj := range objects {
				if namespace != "" {
					namespaced, err := c.IsObjectNamespaced(obj)
					if err != nil {
						return created, fmt.Errorf("%s: %s %s: %w", file, obj.GetKind(), obj.GetName(), err)
					}
					if namespaced {
						obj.SetNamespace(namespace)
					}
				}
				if err := c.Create(ctx, obj); err != nil {
					return created, fmt.Errorf("%s: creating %s %s: %w", file, obj.GetKind(), obj.GetName(), err)
				}
				created = append(created, obj)
			}
		}
	}
	return created, nil
}

// ReadObjects decodes every document of a YAML file.
func ReadObjects(file string) ([]*unstructured.Unstructured, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	decoder := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var objects []*unstructured.Unstructured
	for {
		obj := &unstructured.Unstructured{}
		if err := decoder.Decode(&obj.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return objects, nil
			}
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		if len(obj.Object) != 0 {
			objects = append(objects, obj)
		}
	}
}

func yamlFiles(path string) ([]string, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !info.IsDir() {
		return []string{path}, nil
	}
	files, err := filepath.Glob(filepath.Join(path, "*.yaml"))
	sort.Strings(files)
	return files, err
}
