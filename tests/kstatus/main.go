// kstatus-compute prints what kstatus (sigs.k8s.io/cli-utils/pkg/kstatus), the library Flux,
// Argo CD's health checks and kpt judge resources with, makes of each object it reads: a JSON
// object or a `kind: List` on stdin, one verdict per line as {"name", "status", "message"}.
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
)

type verdict struct {
	Name    string `json:"name"`
	Status  string `json:"status"`
	Message string `json:"message"`
}

func main() {
	input, err := io.ReadAll(os.Stdin)
	if err != nil {
		fail("reading stdin: %v", err)
	}
	var object map[string]interface{}
	// Integers stay int64, as the API machinery (and kstatus's accessors) expect them.
	if err := utiljson.Unmarshal(input, &object); err != nil {
		fail("stdin is not one JSON object: %v", err)
	}
	objects := []map[string]interface{}{object}
	if items, ok := object["items"].([]interface{}); ok && object["kind"] == "List" {
		objects = objects[:0]
		for _, item := range items {
			if o, ok := item.(map[string]interface{}); ok {
				objects = append(objects, o)
			}
		}
	}
	out := json.NewEncoder(os.Stdout)
	for _, o := range objects {
		u := &unstructured.Unstructured{Object: o}
		result, err := status.Compute(u)
		if err != nil {
			fail("%s: %v", u.GetName(), err)
		}
		if err := out.Encode(verdict{u.GetName(), result.Status.String(), result.Message}); err != nil {
			fail("writing: %v", err)
		}
	}
}

func fail(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "kstatus-compute: "+format+"\n", args...)
	os.Exit(1)
}
