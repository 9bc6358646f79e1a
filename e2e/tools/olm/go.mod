// Pins github.com/operator-framework/api, whose crds/ hold OLM v0's CustomResourceDefinitions
// (operators.coreos.com): the e2e tests install them to adopt an OLM install in place.
module windlass.dev/e2e/tools/olm

go 1.26.3

require (
	github.com/go-bindata/go-bindata/v3 v3.1.3 // indirect
	github.com/kisielk/errcheck v1.8.0 // indirect
	github.com/operator-framework/api v0.47.1 // indirect
	golang.org/x/lint v0.0.0-20241112194109-818c5a804067 // indirect
	golang.org/x/mod v0.41.0 // indirect
	golang.org/x/sync v0.24.0 // indirect
	golang.org/x/tools v0.51.0 // indirect
)
