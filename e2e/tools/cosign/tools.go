//go:build tools

// Package tools pins the cosign command the e2e interoperability tests build.
package tools

import _ "github.com/sigstore/cosign/v3/cmd/cosign"
