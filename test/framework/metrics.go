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
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// Metrics is one scrape of a Prometheus text endpoint: sample values by
// metric name, each with its labels.
type Metrics map[string][]sample

type sample struct {
	labels map[string]string
	value  float64
}

// ScrapeMetrics reads a metrics endpoint.
func ScrapeMetrics(ctx context.Context, url string) (Metrics, error) {
	body, err := Fetch(ctx, url)
	if err != nil {
		return nil, err
	}
	return parseMetrics(string(body)), nil
}

// Fetch GETs url and returns its body; any status but 200 is an error.
func Fetch(ctx context.Context, url string) ([]byte, error) {
	request, err := http.NewRequestWithContext(ctx, http.MethodGet, url, http.NoBody)
	if err != nil {
		return nil, err
	}
	response, err := http.DefaultClient.Do(request)
	if err != nil {
		return nil, err
	}
	defer func() { _ = response.Body.Close() }() // the body is read to the end or the request has failed
	if response.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", url, response.Status)
	}
	return io.ReadAll(response.Body)
}

// parseMetrics reads the text exposition format; label values holding
// commas or braces are not expected from the metrics we read.
func parseMetrics(text string) Metrics {
	parsed := Metrics{}
	for line := range strings.Lines(text) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		series, valueText, ok := cutLast(line, " ")
		if !ok {
			continue
		}
		value, err := strconv.ParseFloat(valueText, 64)
		if err != nil {
			continue
		}
		name, labelText, hasLabels := strings.Cut(series, "{")
		labels := map[string]string{}
		if hasLabels {
			for pair := range strings.SplitSeq(strings.TrimSuffix(labelText, "}"), ",") {
				if key, quoted, ok := strings.Cut(pair, "="); ok {
					labels[key] = strings.Trim(quoted, `"`)
				}
			}
		}
		parsed[name] = append(parsed[name], sample{labels: labels, value: value})
	}
	return parsed
}

func cutLast(s, sep string) (string, string, bool) {
	i := strings.LastIndex(s, sep)
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+len(sep):], true
}

// Sum adds up every sample of a metric.
func (m Metrics) Sum(name string) float64 {
	total := 0.0
	for _, s := range m[name] {
		total += s.value
	}
	return total
}

// SumBy adds up a metric's samples by the values of some labels, joined by " ".
func (m Metrics) SumBy(name string, labels ...string) map[string]float64 {
	totals := map[string]float64{}
	for _, s := range m[name] {
		values := make([]string, 0, len(labels))
		for _, label := range labels {
			values = append(values, s.labels[label])
		}
		totals[strings.Join(values, " ")] += s.value
	}
	return totals
}
