// Command capability-sets prints OpenShift's cluster capabilities as JSON, for
// crates/release/data/openshift-capability-sets.json (written by `make openshift-api`):
// `known` is configv1.KnownClusterVersionCapabilities and `sets` is
// configv1.ClusterVersionCapabilitySets (None, v4.11, ..., vCurrent), every list sorted.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"

	configv1 "github.com/openshift/api/config/v1"
)

func sorted(caps []configv1.ClusterVersionCapability) []string {
	out := make([]string, 0, len(caps))
	for _, c := range caps {
		out = append(out, string(c))
	}
	slices.Sort(out)
	return out
}

func main() {
	sets := make(map[string][]string, len(configv1.ClusterVersionCapabilitySets))
	for set, caps := range configv1.ClusterVersionCapabilitySets {
		sets[string(set)] = sorted(caps)
	}
	// encoding/json writes map keys sorted; the struct's two fields are in sorted order too.
	doc := struct {
		Known []string            `json:"known"`
		Sets  map[string][]string `json:"sets"`
	}{Known: sorted(configv1.KnownClusterVersionCapabilities), Sets: sets}
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(string(out))
}
