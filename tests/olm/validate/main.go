// Command olm-validate checks an OLM bundle directory (registry+v1) with operator-framework's own
// validation library, as `operator-sdk bundle validate` does: the default bundle validators plus
// the optional object, OperatorHub, capability, category, removed-API and good-practice checks.
//
// It prints each finding once, as "error: ..." or "warning: ...", and exits 1 when there is an
// error, 2 when the directory is not a bundle. Usage: olm-validate <bundle-dir> <k8s-version>
package main

import (
	"fmt"
	"os"

	"github.com/operator-framework/api/pkg/manifests"
	"github.com/operator-framework/api/pkg/validation"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: olm-validate <bundle-dir> <k8s-version>")
		os.Exit(2)
	}
	bundle, err := manifests.GetBundleFromDir(os.Args[1])
	if err != nil || bundle == nil {
		fmt.Fprintf(os.Stderr, "%s is not a bundle: %v\n", os.Args[1], err)
		os.Exit(2)
	}
	validators := validation.DefaultBundleValidators.WithValidators(
		validation.ObjectValidator,
		validation.OperatorHubV2Validator,
		validation.StandardCapabilitiesValidator,
		validation.StandardCategoriesValidator,
		validation.AlphaDeprecatedAPIsValidator,
		validation.GoodPracticesValidator,
	)
	// Optional values travel as a map among the objects.
	objects := append(bundle.ObjectsToValidate(), map[string]string{"k8s-version": os.Args[2]})
	seen := map[string]bool{}
	failed := false
	for _, result := range validators.Validate(objects...) {
		for _, e := range result.Errors {
			failed = true
			report(seen, "error", e.Error())
		}
		for _, w := range result.Warnings {
			report(seen, "warning", w.Error())
		}
	}
	if failed {
		os.Exit(1)
	}
}

// report prints a finding unless an earlier validator already printed the same one.
func report(seen map[string]bool, level, message string) {
	line := level + ": " + message
	if !seen[line] {
		seen[line] = true
		fmt.Println(line)
	}
}
