//go:build tools

// Package tools pins the kwok command the e2e harness builds.
package tools

import _ "sigs.k8s.io/kwok/cmd/kwok"
